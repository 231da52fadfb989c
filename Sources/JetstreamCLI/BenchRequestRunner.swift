import ArgumentParser
import LoadGenerator

/// Runs a `write` or `read` benchmark and prints its result.
enum BenchRequestRunner {
    static func run(_ configuration: RequestConfiguration, common: BenchCommonOptions) throws {
        let result: RequestResult
        do {
            result = try RequestBenchmark(configuration, settings: try common.settings()).run()
        } catch let error as ValidationError {
            throw error
        } catch {
            BenchOutput.error("\(error)")
            throw ExitCode(1)
        }
        BenchOutput.endProgress()
        try common.finish(json: result.json, table: result.table, clean: result.isClean)
    }
}
