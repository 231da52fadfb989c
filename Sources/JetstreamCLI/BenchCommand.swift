import ArgumentParser

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
        ])
}
