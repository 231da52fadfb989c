import ArgumentParser
import Foundation
import LoadGenerator

/// `jetstream bench`: the load generator that ships with the gateway (as `pgbench` ships with
/// PostgreSQL). Loopback by default; every run is bounded by `--timeout`.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load-test a gateway: SSE fan-out, change-set writes, state reads, idle streams.",
        discussion: """
            Targets http://127.0.0.1:8080 unless --url names another server; a non-loopback host \
            must be given explicitly. Progress goes to stderr once a second; the result is a table \
            on stdout, or one JSON object with --json. Exit status: 0 clean, 1 when events were \
            missing or duplicated, a request failed or the run timed out, 64 on a usage error.
            Fan-out from one client address hits the server's --max-streams-per-client (default \
            100): raise it on the server, or spread with --source-addresses.
            """,
        subcommands: [
            BenchFanoutCommand.self, BenchWriteCommand.self, BenchReadCommand.self, BenchIdleCommand.self,
            BenchPresenceCommand.self,
        ])
}

/// `jetstream bench fanout`: subscribers on K scopes, then M change sets at R/s from W writers.
struct BenchFanoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "S SSE subscribers, then M change sets at R/s; POST-sent → event-parsed latency per delivery.",
        discussion: """
            Creates the scopes PREFIX0…PREFIX(K-1) if missing (root class --root-class), subscribes \
            with Last-Event-ID set to each scope's version, then posts change sets that set the \
            root's --property (or, with --insert-into, add an object and insert it at the end of \
            that collection of the root). Every subscriber must see every accepted version once, \
            in order.
            """)

    @OptionGroup var common: BenchCommonOptions
    @Option(name: .shortAndLong, help: "SSE subscribers.") var subscribers = 1000
    @Option(help: "Scopes the subscribers and writers are spread over.") var scopes = 1
    @Option(name: .shortAndLong, help: "Change sets to post in total.") var changeSets = 1000
    @Option(name: .shortAndLong, help: "Change sets per second, all writers together (0: as fast as possible).")
    var rate = 100.0
    @Option(name: .shortAndLong, help: "Writer connections (keep-alive, one request in flight each).") var writers = 4
    @Option(help: "Scope name prefix.") var scopePrefix = "canvas-bench-"
    @Option(help: "Root class used when a scope has to be created.") var rootClass = "Canvas"
    @Option(help: "String property of the root that each change set sets.") var property = "name"
    @Option(help: "POST the change sets to this node instead (another gateway on the same database).")
    var writeUrl: String?
    @Option(
        help: """
            Each change set adds an object and inserts it at the end of this collection of the root \
            (an operations object), instead of setting --property.
            """)
    var insertInto: String?
    @Option(help: "The class of the objects --insert-into adds.") var insertClass = "Shape"
    @Option(
        help: """
            Each subscriber follows K of the scopes on one GET /v1/events stream (subscriber i: \
            scopes i·K … i·K+K-1, modulo --scopes), instead of one GET /v1/scopes/{name}/events.
            """)
    var scopesPerStream: Int?

    func validate() throws {
        guard subscribers >= 1, scopes >= 1, changeSets >= 1, writers >= 1, rate >= 0 else {
            throw ValidationError("--subscribers, --scopes, --change-sets and --writers must be ≥ 1, --rate ≥ 0")
        }
        if let scopesPerStream, !(1...scopes).contains(scopesPerStream) {
            throw ValidationError("--scopes-per-stream must be 1…--scopes")
        }
    }

    func run() throws {
        let configuration = FanoutConfiguration(
            subscribers: subscribers, scopes: scopes, changeSets: changeSets, rate: rate, writers: writers,
            scopePrefix: scopePrefix, rootClass: rootClass, property: property)
        let writeTarget = try writeUrl.map { try BenchTarget(url: $0) }
        let insertInto = insertInto.map { (collection: $0, elementClass: insertClass) }
        let result = try common.execute { settings in
            var configuration = configuration
            configuration.writeTarget = writeTarget
            configuration.insertInto = insertInto
            configuration.scopesPerStream = scopesPerStream
            return try FanoutBenchmark(configuration, settings: settings).run()
        }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}

/// `jetstream bench write`: C connections posting change sets back-to-back for T seconds.
struct BenchWriteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "C connections POST change sets back-to-back for T seconds (req/s, latency, statuses).")

    @OptionGroup var common: BenchCommonOptions
    @Option(name: .shortAndLong, help: "Keep-alive connections, one request in flight each.") var connections = 32
    @Option(name: .shortAndLong, help: "Seconds of load.") var duration = 10.0
    @Option(help: "Scopes written; connection i writes to scope i % K.") var scopes = 1
    @Option(help: "Scope name prefix.") var scopePrefix = "canvas-bench-"
    @Option(help: "Root class used when a scope has to be created.") var rootClass = "Canvas"
    @Option(help: "String property of the root that each change set sets.") var property = "name"
    @Option(
        help: """
            Call this server method instead of POSTing change sets, with {"args":{"<property>":"…"}} \
            (the demo's rename sets the canvas's name: the same change as the change set).
            """)
    var method: String?

    func validate() throws {
        guard connections >= 1, scopes >= 1, duration > 0 else {
            throw ValidationError("--connections and --scopes must be ≥ 1, --duration > 0")
        }
    }

    func run() throws {
        let configuration = RequestConfiguration(
            workload: .write(
                scopes: scopes, scopePrefix: scopePrefix, rootClass: rootClass, property: property, method: method),
            connections: connections, durationSeconds: duration)
        try BenchRequestRunner.run(configuration, common: common)
    }
}

/// `jetstream bench read`: C connections sending GETs back-to-back for T seconds.
struct BenchReadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "C connections GET a path back-to-back for T seconds (default: the demo scope's state).",
        discussion: "wrk gives the same figure: wrk -t2 -c64 -d10s --latency http://127.0.0.1:8080/v1/scopes/demo")

    @OptionGroup var common: BenchCommonOptions
    @Option(name: .shortAndLong, help: "Keep-alive connections, one request in flight each.") var connections = 64
    @Option(name: .shortAndLong, help: "Seconds of load.") var duration = 10.0
    @Option(help: "Path to GET.") var path = "/v1/scopes/demo"

    func validate() throws {
        guard connections >= 1, duration > 0 else { throw ValidationError("--connections ≥ 1, --duration > 0") }
        guard path.hasPrefix("/"), !path.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" }) else {
            throw ValidationError("--path must start with / and contain no spaces or line breaks")
        }
    }

    func run() throws {
        try BenchRequestRunner.run(
            RequestConfiguration(workload: .read(path: path), connections: connections, durationSeconds: duration),
            common: common)
    }
}

/// `jetstream bench idle`: hold S streams open so the server's memory per stream can be read.
struct BenchIdleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle",
        abstract: "Open S SSE streams, print 'ready S' on stderr once all have their snapshot, hold them.",
        discussion: """
            Read the server's RSS before and after 'ready' to get the memory per idle stream. The \
            streams close after --hold seconds, or on SIGINT/SIGTERM.
            """)

    @OptionGroup var common: BenchCommonOptions
    @Option(name: .shortAndLong, help: "Streams to open.") var subscribers = 10_000
    @Option(help: "Scope the streams follow (created if missing).") var scope = "canvas-idle"
    @Option(
        help: """
            Each stream is one GET /v1/events carrying K scopes, SCOPE-0 … SCOPE-(K-1) (created if \
            missing), and is ready once it has all K snapshots.
            """)
    var scopesPerStream: Int?
    @Option(help: "Root class used when the scope has to be created.") var rootClass = "Canvas"
    @Option(help: "Seconds to hold the streams once all are ready.") var hold = 10.0

    func validate() throws {
        guard subscribers >= 1, hold >= 0 else { throw ValidationError("--subscribers ≥ 1, --hold ≥ 0") }
        if let scopesPerStream, scopesPerStream < 1 { throw ValidationError("--scopes-per-stream must be ≥ 1") }
    }

    func run() throws {
        let result = try common.execute { settings in
            try IdleBenchmark(
                subscribers: subscribers, scope: scope, scopesPerStream: scopesPerStream, rootClass: rootClass,
                holdSeconds: hold, settings: settings,
                onReady: { count in
                    BenchOutput.endProgress()
                    FileHandle.standardError.write(Data("ready \(count)\n".utf8))
                }
            ).run()
        }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}

/// Runs a `write` or `read` benchmark and prints its result.
enum BenchRequestRunner {
    static func run(_ configuration: RequestConfiguration, common: BenchCommonOptions) throws {
        let result = try common.execute { try RequestBenchmark(configuration, settings: $0).run() }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
