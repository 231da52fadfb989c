import Foundation
import Testing

/// The real `jetstream serve` on 127.0.0.1 with a data directory of its own: started on port 0,
/// then killed (SIGKILL), terminated (SIGTERM: a graceful drain, streams get `event: closing`) and
/// restarted on the same port and data directory, as a deployment would.
///
/// ```swift
/// let gateway = try await GatewayProcess(arguments: ["--history-limit", "3"])
/// defer { gateway.shutdown() }
/// gateway.kill()
/// try await gateway.restart()
/// ```
@MainActor
final class GatewayProcess {
    /// The arguments after the host, port and data directory (``restart(arguments:)`` changes them).
    private(set) var arguments: [String]
    /// Holds the store (`data/`) and each launch's stdout and stderr.
    let directory: URL
    private(set) var port = 0
    private var process: Process?
    private var launches = 0

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var isRunning: Bool { process?.isRunning ?? false }

    /// Starts the server with `arguments` after the host, port and data directory.
    init(arguments: [String] = []) async throws {
        self.arguments = arguments
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("jetstream-client-\(UUID())")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("data"), withIntermediateDirectories: true)
        do {
            try await launch(port: 0, retryingFor: .zero)
        } catch {
            shutdown()
            throw error
        }
    }

    /// `.build/debug/jetstream`, found from this file's path (the repository root is four levels up).
    static func binary() throws -> URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let binary = root.appendingPathComponent(".build/debug/jetstream")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HarnessError("\(binary.path) is missing: run `swift build --build-tests` (it builds `jetstream`)")
        }
        return binary
    }

    /// SIGKILL: no drain, no goodbye; open connections just break.
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        waitForExit(of: process, within: .seconds(10))
    }

    /// SIGTERM and no wait: the server drains (`--drain-delay`) while the test watches its clients.
    func beginTermination() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGTERM)
    }

    /// SIGTERM: readiness goes false, every stream gets `event: closing`, then the process exits.
    func terminate() async throws {
        guard let process, process.isRunning else { return }
        beginTermination()
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill()
                throw HarnessError("the server did not exit within 20 s of SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Starts the server again on the same port and data directory (after ``kill()`` or
    /// ``terminate()``), retrying for a few seconds while the port is not free yet.
    func restart() async throws {
        kill()
        try await launch(port: port, retryingFor: .seconds(5))
    }

    /// ``restart()`` with `arguments` from now on instead of the ones before: the same data
    /// directory served, say, with another `--schema`.
    func restart(arguments: [String]) async throws {
        self.arguments = arguments
        try await restart()
    }

    /// Writes `text` to `name` in the server's directory (beside `data/`, not in it) and returns
    /// its path: a schema file for ``restart(arguments:)``.
    func writeFile(_ name: String, _ text: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Kills the server and deletes its directory; for `defer`.
    func shutdown() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The stderr of the last launch (its log), for failure messages.
    func log() -> String {
        let file = directory.appendingPathComponent("stderr-\(launches).log")
        return (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }

    private func launch(port requested: Int, retryingFor patience: Duration) async throws {
        let binary = try Self.binary()
        let deadline = ContinuousClock.now + patience
        while true {
            launches += 1
            let stdout = directory.appendingPathComponent("stdout-\(launches).txt")
            let stderr = directory.appendingPathComponent("stderr-\(launches).log")
            _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
            _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
            let process = Process()
            process.executableURL = binary
            process.arguments =
                [
                    "serve", "--host", "127.0.0.1", "--port", String(requested), "--data-dir",
                    directory.appendingPathComponent("data").path, "--no-access-log",
                ] + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: stdout)
            process.standardError = try FileHandle(forWritingTo: stderr)
            try process.run()
            self.process = process
            if let port = try await listeningPort(of: process, stdout: stdout) {
                self.port = port
                return
            }
            // It exited before listening (on a restart: the port not free yet).
            guard ContinuousClock.now < deadline else {
                throw HarnessError("jetstream serve exited before listening: \(log().suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits (at most 20 s) for `jetstream listening on http://127.0.0.1:PORT` on stdout; nil
    /// when the process exited first.
    private func listeningPort(of process: Process, stdout: URL) async throws -> Int? {
        let prefix = "jetstream listening on http://127.0.0.1:"
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }),
                let port = Int(line.dropFirst(prefix.count))
            {
                return port
            }
            if !process.isRunning { return nil }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill()
        throw HarnessError("jetstream serve did not print its address within 20 s: \(log().suffix(2000))")
    }

    private func waitForExit(of process: Process, within limit: Duration) {
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline {
            usleep(2000)
        }
    }
}
