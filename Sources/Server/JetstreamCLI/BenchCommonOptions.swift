import ArgumentParser
import Foundation
import Glibc
import JetstreamModel
import LoadGenerator
import SocketLoop

/// Options every `jetstream bench` mode takes.
struct BenchCommonOptions: ParsableArguments {
    @Option(help: "Base URL of the server (http://HOST:PORT).")
    var url = "http://127.0.0.1:8080"
    @Flag(help: "Print one JSON object on stdout instead of the table.")
    var json = false
    @Option(help: "Client threads (epoll loops); default: the number of cores.")
    var threads = ProcessInfo.processInfo.activeProcessorCount
    @Option(
        help:
            "Bind client sockets round-robin to 127.0.0.1…127.0.0.N (loopback targets only), for more ports and client addresses."
    )
    var sourceAddresses = 1
    @Option(help: "Hard bound on the whole run in seconds, set-up included.")
    var timeout = 300.0

    func validate() throws {
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard (1...254).contains(sourceAddresses) else { throw ValidationError("--source-addresses must be 1…254") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    /// Resolves the target, raises the descriptor limit and wires progress to stderr.
    func settings() throws -> BenchSettings {
        let target: BenchTarget
        do {
            target = try BenchTarget(url: url)
        } catch {
            throw ValidationError("\(error)")
        }
        if !target.isLoopback {
            BenchOutput.progress("warning: \(target) is not a loopback address; sending load to it as asked")
            if sourceAddresses > 1 { throw ValidationError("--source-addresses is for loopback targets only") }
        }
        FileDescriptorLimit.raiseToHardLimit()
        return BenchSettings(
            target: target, threads: threads, sources: SourceAddresses(count: sourceAddresses),
            timeoutSeconds: timeout, progress: BenchOutput.progress)
    }

    /// Runs a benchmark with these settings: a bad option stays a usage error (64), anything the
    /// run throws (set-up refused, server unreachable) is printed and exits 1.
    func execute<Result>(_ benchmark: (BenchSettings) throws -> Result) throws -> Result {
        let settings = try settings()
        do {
            let result = try benchmark(settings)
            BenchOutput.endProgress()
            return result
        } catch {
            BenchOutput.error("\(error)")
            throw ExitCode(1)
        }
    }

    /// Prints the result and maps a dirty run to exit status 1.
    func finish(json value: JSONValue, table: String, clean: Bool) throws {
        if json {
            print(value.encodedString())
        } else {
            print(table, terminator: "")
        }
        if !clean { throw ExitCode(1) }
    }
}

/// Progress on stderr: rewritten in place on a terminal, one line per report otherwise.
enum BenchOutput {
    @Sendable static func progress(_ line: String) {
        if isatty(STDERR_FILENO) == 1 {
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
        } else {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    /// Ends an in-place progress line before the result is printed.
    static func endProgress() {
        if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("jetstream bench: \(message)\n".utf8))
    }
}
