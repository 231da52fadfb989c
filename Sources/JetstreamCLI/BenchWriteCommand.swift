import ArgumentParser
import LoadGenerator

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

    func validate() throws {
        guard connections >= 1, scopes >= 1, duration > 0 else {
            throw ValidationError("--connections and --scopes must be ≥ 1, --duration > 0")
        }
    }

    func run() throws {
        let configuration = RequestConfiguration(
            workload: .write(scopes: scopes, scopePrefix: scopePrefix, rootClass: rootClass, property: property),
            connections: connections, durationSeconds: duration)
        try BenchRequestRunner.run(configuration, common: common)
    }
}
