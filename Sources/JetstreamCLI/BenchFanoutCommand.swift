import ArgumentParser
import LoadGenerator

/// `jetstream bench fanout`: subscribers on K scopes, then M change sets at R/s from W writers.
struct BenchFanoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "S SSE subscribers, then M change sets at R/s; POST-sent → event-parsed latency per delivery.",
        discussion: """
            Creates the scopes PREFIX0…PREFIX(K-1) if missing (root class --root-class), subscribes \
            with Last-Event-ID set to each scope's version, then posts change sets that set the \
            root's --property. Every subscriber must see every accepted version once, in order.
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

    func validate() throws {
        guard subscribers >= 1, scopes >= 1, changeSets >= 1, writers >= 1, rate >= 0 else {
            throw ValidationError("--subscribers, --scopes, --change-sets and --writers must be ≥ 1, --rate ≥ 0")
        }
    }

    func run() throws {
        let configuration = FanoutConfiguration(
            subscribers: subscribers, scopes: scopes, changeSets: changeSets, rate: rate, writers: writers,
            scopePrefix: scopePrefix, rootClass: rootClass, property: property)
        let result = try common.execute { try FanoutBenchmark(configuration, settings: $0).run() }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
