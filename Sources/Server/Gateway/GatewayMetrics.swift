import CoreMetrics
import HTTPServer
import Metrics
import Prometheus
import ScopeEngine
import Store
import Synchronization

/// The gateway's Prometheus metrics, served at `GET /metrics`: swift-metrics instruments backed
/// by a swift-prometheus registry of their own (so two gateways in one process, as in tests, never
/// share counters, and nothing depends on the global `MetricsSystem` bootstrap).
///
/// Instruments are created up front where their labels are known (problem kinds), so the request
/// path only looks one up and increments it; request timers and counters are created on the first
/// request with that route (the matched route pattern, a small fixed set) and status.
///
/// ```swift
/// metrics.observe(server)        // open streams and dropped subscribers from the HTTP server
/// let text = metrics.exposition() // Prometheus text format 0.0.4
/// ```
public final class GatewayMetrics: ScopeEngineObserver {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    /// Commit latency: from handing a change set to the store until it is durable.
    let commitDuration: CoreMetrics.Timer
    /// Fan-out lag: from the durable commit until the event is queued to every subscriber's loop.
    let fanOutLag: CoreMetrics.Timer
    let changeSetsAccepted: CoreMetrics.Counter
    let changeSetsRejected: [ProblemKind: CoreMetrics.Counter]
    let idempotentReplays: CoreMetrics.Counter
    let openStreams: CoreMetrics.Gauge
    let openConnections: CoreMetrics.Gauge
    let droppedSlowSubscribers: CoreMetrics.Counter
    /// Connections closed at once at the descriptor limit, and listener pauses for it.
    let shedConnections: CoreMetrics.Counter
    let listenerPauses: CoreMetrics.Counter
    let stalledConnections: CoreMetrics.Counter
    let unsentResponseBytes: CoreMetrics.Gauge
    /// Requests answered before routing, by status and the parser's (or deadline's) reason: a
    /// fixed set of sentences, so the label stays small.
    private let rejections = Mutex<[RejectionKey: CoreMetrics.Counter]>([:])

    private struct RejectionKey: Hashable {
        let status: Int
        let reason: String
    }
    private let requestInstruments = Mutex<[RequestKey: RequestInstruments]>([:])
    /// Counters and timers of server methods, made at their first call (only registered methods
    /// reach them, so the labels stay few).
    private let methodInstruments = Mutex(MethodInstruments())

    private struct MethodKey: Hashable {
        let method: String
        let outcome: String
    }

    private struct MethodInstruments {
        var counters: [MethodKey: CoreMetrics.Counter] = [:]
        var timers: [String: CoreMetrics.Timer] = [:]
    }

    private struct RequestKey: Hashable {
        let route: String
        let status: Int
    }

    private struct RequestInstruments {
        let duration: CoreMetrics.Timer
        let count: CoreMetrics.Counter
    }
    private let engine = Mutex<EngineObservation?>(nil)
    /// Nodes on a shared database: conflict retries, catch-ups and the store's connections.
    let conflictRetries: CoreMetrics.Counter
    let catchUpScopes: CoreMetrics.Counter
    let catchUpLag: CoreMetrics.Timer
    private let sharedStore = Mutex<SharedStoreObservation?>(nil)

    private struct SharedStoreObservation {
        let sample: @Sendable () -> SharedStoreStatistics
        var seen = SharedStoreStatistics()
    }

    private struct EngineObservation {
        let stats: @Sendable () -> HTTPServerStats
        var droppedSeen = 0
        var stalledSeen = 0
        var shedSeen = 0
        var pausesSeen = 0
    }

    static let commitBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
    ]
    static let requestBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]
    static let fanOutBuckets: [Duration] = [
        .microseconds(1), .microseconds(5), .microseconds(10), .microseconds(25), .microseconds(50),
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(5),
        .milliseconds(25), .milliseconds(100),
    ]

    /// What a change-set POST can be answered with (rejection counters are created for these).
    static let changeSetProblemKinds: [ProblemKind] = [
        .badRequest, .invalidJSON, .notFound, .unsupportedMediaType, .invalidChangeSet, .preconditionFailed,
        .idempotencyKeyReused, .idempotencyKeyInFlight, .storeUnavailable, .serverBusy, .internal,
    ]

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.requestBuckets
        factory.durationHistogramBuckets = [
            "jetstream_commit_duration_seconds": Self.commitBuckets,
            "jetstream_fanout_lag_seconds": Self.fanOutBuckets,
            "jetstream_cluster_catchup_lag_seconds": Self.commitBuckets,
        ]
        self.registry = registry
        self.factory = factory
        commitDuration = CoreMetrics.Timer(label: "jetstream_commit_duration_seconds", factory: factory)
        fanOutLag = CoreMetrics.Timer(label: "jetstream_fanout_lag_seconds", factory: factory)
        changeSetsAccepted = CoreMetrics.Counter(
            label: "jetstream_changesets_total", dimensions: [("result", "accepted"), ("type", "")],
            factory: factory)
        var rejected: [ProblemKind: CoreMetrics.Counter] = [:]
        for kind in Self.changeSetProblemKinds {
            rejected[kind] = CoreMetrics.Counter(
                label: "jetstream_changesets_total", dimensions: [("result", "rejected"), ("type", kind.rawValue)],
                factory: factory)
        }
        changeSetsRejected = rejected
        idempotentReplays = CoreMetrics.Counter(label: "jetstream_idempotent_replays_total", factory: factory)
        openStreams = CoreMetrics.Gauge(label: "jetstream_sse_streams_open", factory: factory)
        openConnections = CoreMetrics.Gauge(label: "jetstream_http_connections_open", factory: factory)
        droppedSlowSubscribers = CoreMetrics.Counter(
            label: "jetstream_sse_slow_subscribers_dropped_total", factory: factory)
        shedConnections = CoreMetrics.Counter(label: "jetstream_connections_shed_total", factory: factory)
        listenerPauses = CoreMetrics.Counter(label: "jetstream_listener_pauses_total", factory: factory)
        stalledConnections = CoreMetrics.Counter(label: "jetstream_connections_stalled_total", factory: factory)
        unsentResponseBytes = CoreMetrics.Gauge(label: "jetstream_http_unsent_response_bytes", factory: factory)
        conflictRetries = CoreMetrics.Counter(label: "jetstream_cluster_conflict_retries_total", factory: factory)
        catchUpScopes = CoreMetrics.Counter(label: "jetstream_cluster_catchup_total", factory: factory)
        catchUpLag = CoreMetrics.Timer(label: "jetstream_cluster_catchup_lag_seconds", factory: factory)
    }

    /// Reads a shared store's counters at each scrape (nodes on PostgreSQL).
    public func observe(sharedStore sample: @escaping @Sendable () -> SharedStoreStatistics) {
        sharedStore.withLock { $0 = SharedStoreObservation(sample: sample) }
    }

    /// Reads open streams, connections and dropped slow subscribers from `server` at each scrape.
    public func observe(_ server: HTTPServer) {
        engine.withLock { $0 = EngineObservation(stats: { server.stats }) }
    }

    /// Counts one answered request (wire it to ``HTTPServerConfiguration/accessLog``), labelled
    /// by the route that answered it (`other` when none matched).
    public func recordRequest(_ entry: AccessLogEntry) {
        recordRequest(route: entry.route ?? "other", status: entry.status, duration: entry.duration)
        if let reason = entry.rejection { recordRejection(status: entry.status, reason: reason) }
    }

    /// One call of a server method: `jetstream_method_calls_total{method, outcome}` (outcome
    /// `applied`, `replayed`, `rejected`, `failed`, `timeout`, `outdated` or `refused`) and
    /// `jetstream_method_duration_seconds{method}` (the request's time in the engine, a service's
    /// call included).
    func recordMethodCall(_ method: String, outcome: SubmitOutcome, duration: Duration) {
        let kind: String
        switch outcome {
        case .accepted: kind = "applied"
        case .replayed: kind = "replayed"
        case .rejected(.methodRejected): kind = "rejected"
        case .rejected(.methodFailed): kind = "failed"
        case .rejected(.methodTimedOut): kind = "timeout"
        case .rejected(.methodOutdated): kind = "outdated"
        case .rejected: kind = "refused"
        }
        let (counter, timer) = methodInstruments.withLock { instruments in
            let key = MethodKey(method: String(method.prefix(128)), outcome: kind)
            let counter =
                instruments.counters[key]
                ?? CoreMetrics.Counter(
                    label: "jetstream_method_calls_total", dimensions: [("method", key.method), ("outcome", kind)],
                    factory: factory)
            instruments.counters[key] = counter
            let timer =
                instruments.timers[key.method]
                ?? CoreMetrics.Timer(
                    label: "jetstream_method_duration_seconds", dimensions: [("method", key.method)], factory: factory)
            instruments.timers[key.method] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(Int64(duration / .nanoseconds(1)))
    }

    /// Counts a request answered before routing: `jetstream_http_rejected_total{status, reason}`.
    func recordRejection(status: Int, reason: String) {
        let key = RejectionKey(status: status, reason: reason)
        let counter = rejections.withLock { counters in
            if let existing = counters[key] { return existing }
            let created = CoreMetrics.Counter(
                label: "jetstream_http_rejected_total", dimensions: [("status", String(status)), ("reason", reason)],
                factory: factory)
            counters[key] = created
            return created
        }
        counter.increment()
    }

    func recordRequest(route: String, status: Int, duration: Duration) {
        let key = RequestKey(route: route, status: status)
        let instruments = requestInstruments.withLock { instruments in
            if let existing = instruments[key] { return existing }
            let created = RequestInstruments(
                duration: CoreMetrics.Timer(
                    label: "jetstream_http_request_duration_seconds", dimensions: [("route", route)], factory: factory),
                count: CoreMetrics.Counter(
                    label: "jetstream_http_requests_total", dimensions: [("route", route), ("status", String(status))],
                    factory: factory))
            instruments[key] = created
            return created
        }
        instruments.duration.recordNanoseconds(duration.nanosecondsClamped)
        instruments.count.increment()
    }

    func countAccepted() {
        changeSetsAccepted.increment()
    }

    public func didCommit(after duration: Duration) {
        commitDuration.recordNanoseconds(duration.nanosecondsClamped)
    }

    public func didFanOut(after duration: Duration) {
        fanOutLag.recordNanoseconds(duration.nanosecondsClamped)
    }

    public func didReplay() {
        idempotentReplays.increment()
    }

    public func didRetryAfterConflict() {
        conflictRetries.increment()
    }

    public func didCatchUp(records: Int, lag: Duration) {
        catchUpScopes.increment(by: records)
        catchUpLag.recordNanoseconds(lag.nanosecondsClamped)
    }

    func countRejected(_ kind: ProblemKind) {
        changeSetsRejected[kind]?.increment()
    }

    /// Every metric in the Prometheus text exposition format.
    public func exposition() -> [UInt8] {
        let sample = engine.withLock {
            observation -> (HTTPServerStats, dropped: Int, shed: Int, pauses: Int, stalled: Int)? in
            guard let stats = observation?.stats() else { return nil }
            let dropped = max(0, stats.droppedSlowSubscribers - observation!.droppedSeen)
            let shed = max(0, stats.shedConnections - observation!.shedSeen)
            let pauses = max(0, stats.listenerPauses - observation!.pausesSeen)
            observation!.droppedSeen = stats.droppedSlowSubscribers
            observation!.shedSeen = stats.shedConnections
            observation!.pausesSeen = stats.listenerPauses
            let stalled = max(0, stats.stalledConnections - observation!.stalledSeen)
            observation!.stalledSeen = stats.stalledConnections
            return (stats, dropped, shed, pauses, stalled)
        }
        if let (stats, dropped, shed, pauses, stalled) = sample {
            unsentResponseBytes.record(stats.unsentResponseBytes)
            if stalled > 0 { stalledConnections.increment(by: stalled) }
            openStreams.record(stats.openStreams)
            openConnections.record(stats.openConnections)
            if dropped > 0 { droppedSlowSubscribers.increment(by: dropped) }
            if shed > 0 { shedConnections.increment(by: shed) }
            if pauses > 0 { listenerPauses.increment(by: pauses) }
        }
        recordSharedStore()
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

extension GatewayMetrics {
    private func recordSharedStore() {
        let delta = sharedStore.withLock { observation -> (now: SharedStoreStatistics, since: SharedStoreStatistics)? in
            guard let sample = observation?.sample() else { return nil }
            defer { observation!.seen = sample }
            return (sample, observation!.seen)
        }
        guard let (now, since) = delta else { return }
        let connections = [("writer", now.writersUp), ("reader", now.readersUp), ("listener", now.listenerUp ? 1 : 0)]
        for (role, count) in connections {
            CoreMetrics.Gauge(label: "jetstream_store_connections", dimensions: [("role", role)], factory: factory)
                .record(count)
        }
        let counters: [(String, Int)] = [
            ("jetstream_store_batches_total", now.batches - since.batches),
            ("jetstream_store_batch_operations_total", now.committedOperations - since.committedOperations),
            ("jetstream_store_failed_batches_total", now.failedBatches - since.failedBatches),
            ("jetstream_store_reconnects_total", now.reconnects - since.reconnects),
            ("jetstream_cluster_notifications_total", now.notificationsReceived - since.notificationsReceived),
        ]
        for (label, increment) in counters {
            CoreMetrics.Counter(label: label, factory: factory).increment(by: max(0, increment))
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int64.max`.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? 0 : .max }
        return max(0, scaled + attoseconds / 1_000_000_000)
    }
}
