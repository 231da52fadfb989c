import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Synchronization

/// What client B's observers saw: `x` values are unique per change set, so every value is one
/// delivery. Stream-phase values are `streamBase + k`, end-to-end ones `endToEndBase + i`.
@MainActor
final class Receiver {
    static let streamBase = 1_000_000
    static let endToEndBase = 10_000_000

    var streamSeen: [Int: Int] = [:]
    var streamFires = 0
    var marker = -1
    var markerTime: ContinuousClock.Instant?
    /// A's write time per end-to-end set, and B's latency (ms) when its observer fired.
    var sent: [Int: ContinuousClock.Instant] = [:]
    var latencies: [Int: Double] = [:]
    var endToEndDuplicates = 0
    var endToEndUnknown = 0
    /// Stream reconnections of A or B (none expected).
    var reconnects = 0

    func saw(_ value: Int) {
        let now = ContinuousClock.now
        if value >= Self.endToEndBase {
            let index = value - Self.endToEndBase
            if latencies[index] != nil {
                endToEndDuplicates += 1
            } else if let written = sent[index] {
                latencies[index] = Measure.seconds(now - written) * 1e3
            } else {
                endToEndUnknown += 1
            }
        } else if value >= Self.streamBase {
            streamFires += 1
            streamSeen[value, default: 0] += 1
            if value == marker { markerTime = now }
        }
    }
}

/// Waits (at most 30 s) until `sync`'s event stream is connected: `fetch` returns once the state
/// is applied, and the stream request follows on the actor.
@MainActor
func waitUntilLive(_ sync: ScopeSync, _ name: String) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while sync.status != .live {
        guard ContinuousClock.now < deadline else { throw BenchError("\(name)'s stream is not live: \(sync.status)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A value handed from a detached task to the main actor without suspending it.
final class Slot<Value: Sendable>: Sendable {
    private let mutex = Mutex<Value?>(nil)
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    var value: Value? { mutex.withLock { $0 } }
}

/// Another writer: POSTs one-fragment change sets over plain HTTP, `concurrency` in flight.
enum RemoteWriter {
    struct Outcome: Sendable {
        /// The version each body got (-1: refused or failed).
        var versions: [Int]
        var failures: [String]
        var seconds: Double
    }

    /// Posts every body but the last `concurrency` at a time, then the last alone (so it is the
    /// highest version).
    static func run(_ http: GatewayHTTP, scope: String, bodies: [[UInt8]], concurrency: Int) async -> Outcome {
        let path = "/v1/scopes/\(scope)/changesets"
        let started = ContinuousClock.now
        let results = Mutex((versions: [Int](repeating: -1, count: bodies.count), failures: [String]()))
        let post: @Sendable (Int) async -> Void = { index in
            do {
                let (status, answer) = try await http.send("POST", path, bytes: bodies[index])
                let version = (try? JSONParser.parse(answer))?["version"]?.number?.int64Value
                results.withLock { results in
                    if status == 200, let version {
                        results.versions[index] = Int(version)
                    } else if results.failures.count < 10 {
                        results.failures.append(
                            "POST \(index): \(status) \(String(decoding: answer.prefix(200), as: UTF8.self))")
                    }
                }
            } catch {
                results.withLock { if $0.failures.count < 10 { $0.failures.append("POST \(index): \(error)") } }
            }
        }
        let concurrent = bodies.count - 1
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<max(1, concurrency) {
                group.addTask {
                    for index in stride(from: worker, to: concurrent, by: max(1, concurrency)) { await post(index) }
                }
            }
        }
        if bodies.count > 0 { await post(bodies.count - 1) }
        let (versions, failures) = results.withLock { ($0.versions, $0.failures) }
        return Outcome(versions: versions, failures: failures, seconds: Measure.seconds(.now - started))
    }
}

struct StreamResult {
    var events = 0
    var postSeconds = 0.0
    var blockedSeconds = 0.0
    /// Whether every POST was answered while the client was held (so the drain is the client alone).
    var queuedBeforeRelease = false
    var drainSeconds = 0.0
    var expectedFires = 0
    var fires = 0
    var missing = 0
    var duplicates = 0
    var unexpected = 0
    var stateMismatches = 0
    var versionReached = false
    var failures: [String] = []

    var eventsPerSecond: Double { drainSeconds > 0 ? Double(events) / drainSeconds : 0 }
}

/// The remote apply over the real stream: client B (typed, live, 100 observers) is held — the
/// main actor blocked — while another writer POSTs `events` change sets, so their events queue
/// up in B's transport; then B is released and the time until its observer sees the last event
/// is the time B's whole path (SSE parse, JSON, `SyncEngine`, `applySyncFragments`, observers)
/// took for all of them.
@MainActor
func measureStreamApply(
    _ http: GatewayHTTP, seeded: SeededScope, receiver: Receiver, sync: ScopeSync, shapes: [Shape],
    observed: [Int], events: Int, concurrency: Int
) async throws -> StreamResult {
    var plan = EventPlan.shapes(count: events, observed: observed, objects: shapes.count, seed: 7)
    plan[events - 1] = observed[0]
    let values = (0..<events).map { Receiver.streamBase + $0 }
    receiver.marker = values[events - 1]
    let bodies: [[UInt8]] = zip(plan, values).map { index, value in
        JSONValue.object(["fragments": [InProcessApply.fragment(seeded.shapeUUIDs[index], x: value).jsonValue]])
            .encoded()
    }
    let slot = Slot<RemoteWriter.Outcome>()
    var result = StreamResult(events: events)
    let held = ContinuousClock.now
    Task.detached {
        slot.set(await RemoteWriter.run(http, scope: seeded.name, bodies: bodies, concurrency: concurrency))
    }
    // Hold B: nothing on the main actor runs, the transport buffers the stream's chunks. Bounded
    // well below the client's silence watchdog (2 × 15 s).
    while slot.value == nil && ContinuousClock.now - held < .seconds(20) { usleep(1_000) }
    result.queuedBeforeRelease = slot.value != nil
    // URLSession hands the stream's chunks over on its delegate queue, and lags the server a
    // little: give the last ones time to reach the stream's buffer.
    usleep(1_000_000)
    result.blockedSeconds = Measure.seconds(.now - held)
    progress("stream: B released, \(events) events queued")
    let released = ContinuousClock.now
    while receiver.markerTime == nil && ContinuousClock.now - released < .seconds(120) {
        try await Task.sleep(for: .milliseconds(2))
    }
    guard let markerTime = receiver.markerTime else {
        result.failures.append("B did not see the last event within 120 s")
        return result
    }
    result.drainSeconds = Measure.seconds(markerTime - released)
    while slot.value == nil && ContinuousClock.now - released < .seconds(120) {
        try await Task.sleep(for: .milliseconds(10))
    }
    guard let outcome = slot.value else {
        result.failures.append("the writer did not finish")
        return result
    }
    result.postSeconds = outcome.seconds
    result.failures += outcome.failures
    result.versionReached = sync.version >= (outcome.versions.max() ?? Int.max)

    // Every event on an observed shape fired its observer once; every shape shows its last value.
    let observedSet = Set(observed)
    var expected: Set<Int> = []
    var last: [Int: (version: Int, value: Int)] = [:]
    for (offset, index) in plan.enumerated() where outcome.versions[offset] > 0 {
        if observedSet.contains(index) { expected.insert(values[offset]) }
        if (last[index]?.version ?? -1) < outcome.versions[offset] {
            last[index] = (outcome.versions[offset], values[offset])
        }
    }
    result.expectedFires = expected.count
    result.fires = receiver.streamFires
    result.missing = expected.subtracting(receiver.streamSeen.keys).count
    result.duplicates = receiver.streamSeen.values.reduce(0) { $0 + max(0, $1 - 1) }
    result.unexpected = Set(receiver.streamSeen.keys).subtracting(expected).count
    result.stateMismatches = last.filter { index, entry in shapes[index].x != Float(entry.value) }.count
    return result
}

struct EndToEndResult {
    var sets = 0
    var rate = 0.0
    var seconds = 0.0
    var latencies: [Double] = []
    var bySet: [Int: Double] = [:]
    var missing = 0
    var duplicates = 0
    var unknown = 0
    var maxPending = 0
    var pendingAtEnd = 0
    var latestWriteMs = 0.0
}

/// Client A writes `x` of one observed shape `rate` times a second for `seconds` (a local change
/// each, flushed by the client as one change set); B's observer notes when it sees it.
@MainActor
func measureEndToEnd(
    receiver: Receiver, writer: ScopeSync, shapes: [Shape], rate: Double, seconds: Double
) async throws -> EndToEndResult {
    var result = EndToEndResult(sets: max(1, Int(rate * seconds)), rate: rate, seconds: seconds)
    let interval = Duration.seconds(1 / rate)
    let start = ContinuousClock.now + .milliseconds(50)
    for index in 0..<result.sets {
        let due = start + interval * index
        try await Task.sleep(until: due, clock: .continuous)
        let shape = shapes[index % shapes.count]
        let now = ContinuousClock.now
        result.latestWriteMs = max(result.latestWriteMs, Measure.seconds(now - due) * 1e3)
        receiver.sent[index] = now
        shape.x = Float(Receiver.endToEndBase + index)
        result.maxPending = max(result.maxPending, writer.pendingCount)
    }
    let deadline = ContinuousClock.now + .seconds(15)
    while (receiver.latencies.count < result.sets || writer.pendingCount > 0) && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
    }
    result.latencies = (0..<result.sets).compactMap { receiver.latencies[$0] }
    result.bySet = receiver.latencies
    result.missing = result.sets - result.latencies.count
    result.duplicates = receiver.endToEndDuplicates
    result.unknown = receiver.endToEndUnknown
    result.pendingAtEnd = writer.pendingCount
    return result
}
