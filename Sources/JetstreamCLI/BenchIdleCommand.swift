import ArgumentParser
import Foundation
import LoadGenerator

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
    @Option(help: "Root class used when the scope has to be created.") var rootClass = "Canvas"
    @Option(help: "Seconds to hold the streams once all are ready.") var hold = 10.0

    func validate() throws {
        guard subscribers >= 1, hold >= 0 else { throw ValidationError("--subscribers ≥ 1, --hold ≥ 0") }
    }

    func run() throws {
        let result = try common.execute { settings in
            try IdleBenchmark(
                subscribers: subscribers, scope: scope, rootClass: rootClass, holdSeconds: hold, settings: settings,
                onReady: { count in
                    BenchOutput.endProgress()
                    FileHandle.standardError.write(Data("ready \(count)\n".utf8))
                }
            ).run()
        }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
