import ArgumentParser
import LoadGenerator

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
