import Glibc
import JetstreamJSON
import Synchronization

/// `jetstream bench idle`: opens S event streams on one scope (each takes the snapshot), or with
/// `scopesPerStream` K, S `GET /v1/events` streams each carrying the K scopes `SCOPE-0`…`SCOPE-(K-1)`
/// (each takes K snapshots); reports `ready S` once every stream has its snapshots, then holds them
/// open so the caller can read the server's memory, until the hold time passes or SIGINT/SIGTERM
/// arrives.
public struct IdleBenchmark: Sendable {
    public struct Result: Sendable {
        public var target: String
        public var subscribers: Int
        public var scopesPerStream: Int?
        public var connected = 0
        public var failed = 0
        public var connectSeconds = 0.0
        public var heldSeconds = 0.0
        public var errors: [String: Int] = [:]

        public var isClean: Bool { connected == subscribers && failed == 0 }

        public var json: JSONValue {
            typealias F = ReportFormatting
            return F.object([
                ("mode", "idle"), ("target", .string(target)), ("subscribers", F.integer(subscribers)),
                ("scopesPerStream", scopesPerStream.map { F.integer($0) } ?? .null),
                ("connected", F.integer(connected)), ("failed", F.integer(failed)),
                ("connectSeconds", F.number(connectSeconds)), ("heldSeconds", F.number(heldSeconds)),
                ("errorReasons", F.counts(errors)), ("clean", .bool(isClean)),
            ])
        }

        public var table: String {
            typealias F = ReportFormatting
            var rows: [(String, String)] = [
                (
                    "streams",
                    scopesPerStream.map {
                        "\(F.grouped(connected)) of \(F.grouped(subscribers)) got the snapshots of their \($0) scopes"
                    } ?? "\(F.grouped(connected)) of \(F.grouped(subscribers)) got their first event"
                ),
                ("connect", "\(F.fixed(connectSeconds)) s"), ("held", "\(F.fixed(heldSeconds)) s"),
            ]
            for (reason, count) in errors.sorted(by: { $0.key < $1.key }) {
                rows.append(("error", "\(count) × \(reason)"))
            }
            rows.append(("result", isClean ? "clean" : "NOT CLEAN"))
            return F.table(title: "jetstream bench idle → \(target)", rows: rows)
        }
    }

    public let subscribers: Int
    public let scope: String
    /// Scopes on each `GET /v1/events` stream, or nil for `GET /v1/scopes/{scope}/events`.
    public let scopesPerStream: Int?
    public let rootClass: String
    public let holdSeconds: Double
    public let settings: BenchSettings
    /// Called once every stream has its first event (the CLI prints `ready S` on stderr).
    public let onReady: @Sendable (Int) -> Void

    public init(
        subscribers: Int, scope: String, scopesPerStream: Int? = nil, rootClass: String = "Canvas",
        holdSeconds: Double, settings: BenchSettings, onReady: @escaping @Sendable (Int) -> Void
    ) {
        self.subscribers = subscribers
        self.scope = scope
        self.scopesPerStream = scopesPerStream
        self.rootClass = rootClass
        self.holdSeconds = holdSeconds
        self.settings = settings
        self.onReady = onReady
    }

    public func run() throws -> Result {
        let start = MonotonicClock.now()
        let deadline = settings.deadline(from: start)
        let client = BlockingHTTPClient(target: settings.target)
        let names = scopesPerStream.map { count in (0..<count).map { "\(scope)-\($0)" } } ?? [scope]
        let fixtures = try names.map { try ScopeFixture.prepare(name: $0, rootClass: rootClass, client: client) }
        let layout = StreamScopes(count: fixtures.count, perStream: scopesPerStream)
        IdleBenchmark.installStopSignals()
        var result = Result(target: settings.target.description, subscribers: subscribers)
        result.scopesPerStream = scopesPerStream
        let counters = BenchCounters()
        let loopCount = min(settings.threads, max(1, subscribers))
        let groups = (0..<loopCount).map {
            SubscriberGroup(
                loopIndex: $0, loopCount: loopCount, subscribers: subscribers, scopes: fixtures,
                layout: layout, authority: settings.target.authority, resume: false, counters: counters)
        }
        let loops = try groups.map { group in
            let loop = try ClientLoop(index: group.loopIndex, target: settings.target, sources: settings.sources)
            loop.tickMilliseconds = 100
            loop.onStart = { loop in for tag in group.tags { loop.connect(tag: tag, delegate: group) } }
            return loop
        }
        let threads = loops.map { loop in BackgroundThread { loop.run() } }
        var ticker = ProgressTicker(started: start)
        _ = ticker.wait(
            until: deadline,
            report: { elapsed in
                settings.progress(
                    "idle \(ReportFormatting.fixed(elapsed, 0))s: \(counters.value(.events))/\(subscribers) streams ready"
                )
            },
            isDone: {
                counters.value(.events) + counters.value(.failedConnections) >= subscribers
                    || IdleBenchmark.stopSignal.load(ordering: .relaxed)
            })
        let ready = MonotonicClock.now()
        result.connectSeconds = Double(ready - start) / 1e9
        result.connected = counters.value(.events)
        onReady(result.connected)
        let holdUntil = min(deadline, ready + UInt64(max(0, holdSeconds) * 1e9))
        while MonotonicClock.now() < holdUntil && !IdleBenchmark.stopSignal.load(ordering: .relaxed) {
            ProgressTicker.sleep(milliseconds: 20)
        }
        result.heldSeconds = Double(MonotonicClock.now() - ready) / 1e9
        for loop in loops { loop.stop() }
        for thread in threads { thread.join() }
        result.failed = subscribers - result.connected
        for group in groups {
            for (reason, count) in group.errors { result.errors[reason, default: 0] += count }
        }
        return result
    }

    static let stopSignal = Atomic<Bool>(false)

    private static func installStopSignals() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber) { _ in IdleBenchmark.stopSignal.store(true, ordering: .relaxed) }
        }
    }
}
