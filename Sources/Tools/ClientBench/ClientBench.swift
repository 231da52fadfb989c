import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel

// The Swift client's benchmark (docs/benchmarks.md, "Swift client"): remote apply with
// observers on a 10k-object scope, in process and over the real stream, end to end (client A's
// local change → client B's observer) at a fixed rate, the observers' actor's time per event with
// parsing on and off it, and the costs of storage, against a `jetstream serve` it starts.
// Run: swift build -c release --product jetstream && swift build -c release --product ClientBench
// && .build/release/ClientBench [--json]. Progress on stderr; figures are printed, never asserted.

struct Options {
    var binary = ".build/release/jetstream"
    var url: URL?
    var shapes = 10_000
    var observers = 100
    var applyEvents = 20_000
    var streamEvents = 5_000
    var writers = 8
    var rate = 100.0
    var seconds = 10.0
    var actorEvents = 5_000
    var offlineChanges = 1_000
    var coldStarts = 5
    var timeout = 600.0
    var only: Set<String> = []
    var asJSON = false

    static let sections: Set<String> = ["apply", "stream", "e2e", "actor", "offline"]

    static let usage = """
        usage: ClientBench [--binary PATH | --url http://127.0.0.1:PORT] [--shapes N] [--observers N]
                           [--apply-events N] [--stream-events N] [--writers N] [--rate N] [--seconds S]
                           [--actor-events N] [--offline-changes N] [--cold-starts N]
                           [--only apply,stream,e2e,actor,offline] [--timeout S] [--json]
        """

    func runs(_ section: String) -> Bool { only.isEmpty || only.contains(section) }

    static func parse(_ arguments: [String]) throws -> Options? {
        var options = Options()
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchError("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        func integer(_ minimum: Int, _ maximum: Int) throws -> Int {
            let text = try value()
            guard let number = Int(text), (minimum...maximum).contains(number) else {
                throw BenchError("\(arguments[index - 1]) must be \(minimum)…\(maximum), got \(text)")
            }
            return number
        }
        func decimal() throws -> Double {
            let text = try value()
            guard let number = Double(text), number > 0, number <= 3_600 else {
                throw BenchError("\(arguments[index - 1]) must be a positive number up to 3600, got \(text)")
            }
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--binary": options.binary = try value()
            case "--url":
                let text = try value()
                guard let url = URL(string: text), url.scheme == "http", url.host != nil else {
                    throw BenchError("--url must be http://host:port, got \(text)")
                }
                options.url = url
            case "--shapes": options.shapes = try integer(2, 90_000)
            case "--observers": options.observers = try integer(1, 10_000)
            case "--apply-events": options.applyEvents = try integer(1, 1_000_000)
            case "--stream-events": options.streamEvents = try integer(2, 500_000)
            case "--writers": options.writers = try integer(1, 64)
            case "--rate": options.rate = try decimal()
            case "--seconds": options.seconds = try decimal()
            // Every event's sample is kept (`EventTiming` keeps the first 65,536).
            case "--actor-events": options.actorEvents = try integer(2, 65_536)
            case "--offline-changes": options.offlineChanges = try integer(1, 10_000)
            case "--cold-starts": options.coldStarts = try integer(1, 50)
            case "--timeout": options.timeout = try decimal()
            case "--only":
                options.only = Set(try value().split(separator: ",").map(String.init))
                guard !options.only.isEmpty, options.only.isSubset(of: sections) else {
                    throw BenchError("--only takes apply, stream, e2e, actor and/or offline")
                }
            case "--json": options.asJSON = true
            case "-h", "--help": return nil
            default: throw BenchError("unknown argument \(arguments[index])")
            }
            index += 1
        }
        options.observers = min(options.observers, options.shapes)
        guard options.rate * options.seconds <= 1_000_000 else {
            throw BenchError("--rate × --seconds is at most 1,000,000")
        }
        return options
    }
}

func progress(_ line: String) {
    FileHandle.standardError.write(Data("ClientBench: \(line)\n".utf8))
}

@main
struct ClientBench {
    @MainActor
    static func main() async {
        let parsed: Options?
        do {
            parsed = try Options.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("ClientBench: \(error)\n\(Options.usage)\n".utf8))
            exit(2)
        }
        guard let options = parsed else {
            print(Options.usage)
            exit(0)
        }
        // The whole run is bounded; the server's guard stops it when this process exits.
        let timeout = options.timeout
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: timeout)
            progress("timed out after \(timeout) s")
            exit(1)
        }
        var report = Report(options: options)
        var server: ServerProcess?
        do {
            let url: URL
            if let given = options.url {
                if given.host != "127.0.0.1" && given.host != "localhost" {
                    progress("warning: \(given) is not this machine's loopback")
                }
                url = given
                report.serverNote = "given, \(given.absoluteString)"
            } else {
                let started = try ServerProcess(binary: options.binary)
                server = started
                url = try started.start(timeout: .seconds(90))
                report.serverNote = "`\(options.binary) serve` started on \(url.absoluteString), fresh data directory"
            }
            progress("server at \(url.absoluteString)")
            try await run(url: url, options: options, report: &report)
        } catch {
            report.failures.append("\(error)")
        }
        if let server {
            server.stop()
            progress("server stopped")
        }
        report.check()
        print(options.asJSON ? report.json : report.markdown)
        exit(report.failures.isEmpty ? 0 : 1)
    }

    @MainActor
    static func run(url: URL, options: Options, report: inout Report) async throws {
        let http = GatewayHTTP(base: url)
        progress("seeding a Canvas with \(options.shapes) shapes")
        let seeded = try await SeededScope.create(http, shapes: options.shapes)
        report.seedSeconds = seeded.seconds
        report.objects = options.shapes + 1
        let observed = EventPlan.observed(count: options.observers, objects: options.shapes, seed: 3)

        // The state as the client receives it, and its load into typed objects.
        let schema = try Schema.parse(json: try await http.expect(200, "GET", "/v1/schema"))
        let body = try await http.expect(200, "GET", "/v1/scopes/\(seeded.name)")
        report.stateBytes = body.count
        let importStart = ContinuousClock.now
        let json = try JSONParser.parse(body)
        guard let rootText = json["rootUUID"]?.string, let rootUUID = UUID(wireString: rootText),
            let fragmentsJSON = json["fragments"]?.array, let version = json["version"]?.number?.int64Value
        else { throw BenchError("GET state: no rootUUID, fragments or version") }
        let fragments = try fragmentsJSON.map { element throws(FragmentError) in try SyncFragment(json: element) }
        let state = try ScopeState(importing: fragments, rootUUID: rootUUID, version: Int(version), schema: schema)
        report.stateImportMs = Measure.seconds(.now - importStart) * 1e3

        if options.runs("apply") {
            try measureInProcess(
                state: state, schema: schema, name: seeded.name, observed: observed, options: options, report: &report)
        } else {
            report.typedLoadMs = try InProcessApply(state: state, schema: schema, name: seeded.name).loadSeconds * 1e3
        }
        if options.runs("stream") || options.runs("e2e") {
            try await measureLive(
                url: url, http: http, seeded: seeded, observed: observed, options: options, report: &report)
        }
        if options.runs("actor") {
            do {
                report.actor = try await measureActorTime(
                    http, url: url, seeded: seeded, observed: observed, events: options.actorEvents,
                    writers: options.writers)
            } catch {
                report.failures.append("actor: \(error)")
            }
        }
        if options.runs("offline") {
            do {
                report.offline = try await measureOffline(
                    http, url: url, seeded: seeded, changes: options.offlineChanges, coldStarts: options.coldStarts)
            } catch {
                report.failures.append("offline: \(error)")
            }
        }
    }

    /// The stream and end-to-end sections: client B with the observers, and client A writing.
    @MainActor
    static func measureLive(
        url: URL, http: GatewayHTTP, seeded: SeededScope, observed: [Int], options: Options, report: inout Report
    ) async throws {
        // Client B: live on the scope, with the observers.
        let client = Client(url: url)
        let receiver = Receiver()
        let token = ObserverToken()
        let bCanvas = Canvas()
        let bScope = Scope(name: seeded.name, root: bCanvas)
        var fetchStart = ContinuousClock.now
        let bSync = try await client.fetch(bScope)
        report.fetchMs.append(Measure.seconds(.now - fetchStart) * 1e3)
        try await waitUntilLive(bSync, "B")
        // A reconnection would replace live events by a resume or a reset: counted, and a failure.
        bSync.onStatusChange { [receiver] status in if case .reconnecting = status { receiver.reconnects += 1 } }
        let bShapes = bCanvas.shapes
        guard bShapes.count == options.shapes else { throw BenchError("B fetched \(bShapes.count) shapes") }
        for index in observed {
            let shape = bShapes[index]
            shape.observeChange(token, keys: ["x"]) { [unowned shape, receiver] in receiver.saw(Int(shape.x)) }
        }
        var aSync: ScopeSync?
        do {
            if options.runs("stream") {
                progress("stream: \(options.streamEvents) events posted while B is held, then drained")
                report.stream = try await measureStreamApply(
                    http, seeded: seeded, receiver: receiver, sync: bSync, shapes: bShapes, observed: observed,
                    events: options.streamEvents, concurrency: options.writers)
            }
            if options.runs("e2e") {
                let aCanvas = Canvas()
                let aScope = Scope(name: seeded.name, root: aCanvas)
                fetchStart = ContinuousClock.now
                let sync = try await client.fetch(aScope)
                report.fetchMs.append(Measure.seconds(.now - fetchStart) * 1e3)
                aSync = sync
                try await waitUntilLive(sync, "A")
                sync.onStatusChange { [receiver] status in if case .reconnecting = status { receiver.reconnects += 1 } }
                let allShapes = aCanvas.shapes
                let aShapes = observed.map { allShapes[$0] }
                progress("end to end: \(options.rate)/s for \(options.seconds) s")
                report.endToEnd = try await measureEndToEnd(
                    receiver: receiver, writer: sync, shapes: aShapes, rate: options.rate, seconds: options.seconds)
            }
        } catch {
            report.failures.append("\(error)")
        }
        report.reconnects = receiver.reconnects
        await aSync?.stop()
        await bSync.stop()
        withExtendedLifetime(token) {}  // the observations hold their observer weakly
    }

    /// The framework and the client's per-event work in process, on a typed copy of the state.
    @MainActor
    static func measureInProcess(
        state: ScopeState, schema: Schema, name: String, observed: [Int], options: Options, report: inout Report
    ) throws {
        progress("in process: \(options.applyEvents) events per row")
        var bench = try InProcessApply(state: state, schema: schema, name: name)
        report.typedLoadMs = bench.loadSeconds * 1e3
        let observedSet = Set(observed)
        let shapes = options.shapes
        var nextValue = 3_000_000
        func plan(_ seed: UInt64) -> [Int] {
            EventPlan.shapes(count: options.applyEvents, observed: observed, objects: shapes, seed: seed)
        }
        // Warm-up, then without observers, then with them.
        _ = try bench.applyFragments(plan: Array(plan(11).prefix(500)), firstValue: nextValue)
        nextValue += 500
        let quiet = plan(12)
        let quietTimes = try bench.applyFragments(plan: quiet, firstValue: nextValue)
        nextValue += quiet.count
        report.apply.append(
            ApplyRow(
                key: "applySyncFragments.noObservers", summary: "in process: `Scope.applySyncFragments`, no observers",
                observers: 0, times: quietTimes, expectedFires: 0, fires: bench.counter.fires))
        bench.observe(observed)
        let observedPlan = plan(13)
        let times = try bench.applyFragments(plan: observedPlan, firstValue: nextValue)
        nextValue += observedPlan.count
        report.apply.append(
            ApplyRow(
                key: "applySyncFragments", summary: "in process: `Scope.applySyncFragments`",
                observers: observed.count, times: times,
                expectedFires: observedPlan.filter(observedSet.contains).count, fires: bench.counter.fires))
        bench.counter.reset()
        let clientPlan = plan(14)
        let clientTimes = try bench.applyClientEquivalent(plan: clientPlan, firstValue: nextValue)
        report.apply.append(
            ApplyRow(
                key: "clientEquivalent",
                summary:
                    "in process, the client's steps: SSE parse, JSON parse, decode, model-core apply (the engine's "
                    + "confirmed state), `applySyncFragments`, `adoptState`",
                observers: observed.count, times: clientTimes,
                expectedFires: clientPlan.filter(observedSet.contains).count, fires: bench.counter.fires))
    }
}
