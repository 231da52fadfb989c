import ArgumentParser
import LoadGenerator

/// Runs a `write` or `read` benchmark and prints its result.
enum BenchRequestRunner {
    static func run(_ configuration: RequestConfiguration, common: BenchCommonOptions) throws {
        let result = try common.execute { try RequestBenchmark(configuration, settings: $0).run() }
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
