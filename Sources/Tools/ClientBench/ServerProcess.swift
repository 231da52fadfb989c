import Foundation
import Synchronization

/// `jetstream serve` on 127.0.0.1, port 0, in a fresh data directory (durable SQLite store), run
/// under a `sh` guard that stops it however this process ends: the guard reads its stdin, our end
/// of a pipe, and sends the server SIGTERM at EOF — when ``stop()`` closes the pipe, or when the
/// kernel closes it because this process exited or crashed.
final class ServerProcess: Sendable {
    private let process: Process
    private let guardInput = Pipe()
    private let output = Pipe()
    private let state = Mutex(OutputState())
    private let arrived = DispatchSemaphore(value: 0)
    let directory: URL
    let logFile: URL

    private struct OutputState {
        var text = ""
        var ended = false
    }

    /// `directory binary args…`: the server in the background (stdin /dev/null, stderr to the
    /// log), its pid on stdout, then SIGTERM at EOF on our stdin, wait for it, remove the directory.
    private static let guardScript = """
        dir=$1; shift
        "$@" </dev/null 2>>"$dir/jetstream.log" &
        pid=$!
        echo "guard $pid"
        read -r _ || true
        kill -TERM "$pid" 2>/dev/null
        wait "$pid"
        rm -rf "$dir"
        """

    init(binary: String) throws {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchError("\(binary) is not an executable: build it (swift build -c release --product jetstream)")
        }
        directory = FileManager.default.temporaryDirectory.appending(path: "clientbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        logFile = directory.appending(path: "jetstream.log")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", Self.guardScript, "clientbench-guard", directory.path, binary, "serve", "--host", "127.0.0.1",
            "--port", "0", "--data-dir", directory.appending(path: "data").path, "--no-access-log",
            "--grace-period", "5",
        ]
        process.standardInput = guardInput
        process.standardOutput = output
    }

    /// Starts the server and returns its URL once it printed its listening line.
    func start(timeout: Duration) throws -> URL {
        try process.run()
        let reader = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let data = reader.availableData
                state.withLock { state in
                    if data.isEmpty { state.ended = true } else { state.text += String(decoding: data, as: UTF8.self) }
                }
                arrived.signal()
                if data.isEmpty { return }
            }
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let (text, ended) = state.withLock { ($0.text, $0.ended) }
            for line in text.split(separator: "\n") {
                if let port = line.firstMatch(of: /^jetstream listening on http:\/\/127\.0\.0\.1:(\d+)$/)?.1 {
                    return URL(string: "http://127.0.0.1:\(port)")!
                }
            }
            if ended || !serverAlive {
                let tail = logTail()
                stop()
                throw BenchError("jetstream serve exited before listening:\n\(tail)")
            }
            guard deadline - .now > .zero else {
                let tail = logTail()
                stop()
                throw BenchError("jetstream serve did not listen within \(timeout):\n\(tail)")
            }
            _ = arrived.wait(timeout: .now() + .milliseconds(200))
        }
    }

    /// The server's pid, from the guard's first line.
    private var serverPID: Int32? {
        let text = state.withLock { $0.text }
        return text.firstMatch(of: /guard (\d+)/).flatMap { Int32($0.1) }
    }

    /// False once the server has exited (a zombie until the guard reaps it counts as exited);
    /// true while its pid is not known yet.
    private var serverAlive: Bool {
        guard let pid = serverPID else { return process.isRunning }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: end)...].trimmingPrefix(" ").first != "Z"
    }

    /// SIGTERM through the guard, SIGKILL if the server is still there after 30 s; removes the
    /// data directory.
    func stop() {
        try? guardInput.fileHandleForWriting.close()
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning {
            if let pid = serverPID { kill(pid, SIGKILL) }
            process.terminate()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    func logTail(lines: Int = 20) -> String {
        guard let text = try? String(contentsOf: logFile, encoding: .utf8) else { return "(no log)" }
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
