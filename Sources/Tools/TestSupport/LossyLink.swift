import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A lossy TCP link in front of a server on 127.0.0.1, for tests whose clients must get through
/// a bad network: every chunk is held `latency ± jitter` (without reordering a direction's bytes)
/// and connections are reset (RST, both sides) at random. It is `Tests/gateway/fault_proxy.py`
/// run as a child process — the same proxy the Python and JavaScript suites use, so the faults
/// are the same whichever client is tested; the kernels the tests run on have no `netem`.
///
/// ``start(upstreamPort:faults:)`` launches it (with `.venv/bin/python` under the repository
/// root, else `python3`) and waits for its `fault proxy listening on 127.0.0.1:PORT` line; the
/// clients then connect to ``url`` instead of the server. ``stop()`` ends it and returns what it
/// did, so a test can check that its faults really happened. The proxy also stops when the test
/// process dies: its stdin is a pipe only this object holds the write end of.
///
/// ```swift
/// let link = try await LossyLink.start(
///     upstreamPort: server.port,
///     faults: .init(latency: .milliseconds(10), jitter: .milliseconds(5), dropProbability: 0.2, seed: 7))
/// // … clients on link.url …
/// let stats = try await link.stop()
/// #expect(stats.dropped > 0)
/// ```
public final class LossyLink: Sendable {
    /// What the link does to the connections through it (`fault_proxy.py`'s flags).
    public struct Faults: Sendable {
        /// How long each chunk is held, in each direction.
        public var latency: Duration
        /// The latency varies uniformly by up to this much either way; bytes are never reordered.
        public var jitter: Duration
        /// The chance that a new connection is reset…
        public var dropProbability: Double
        /// …at a uniformly random time this soon after it was accepted (if it is still open).
        public var dropWithin: Duration
        /// No more connections than this are dropped in all (nil: no bound), so that clients
        /// that retry get through in the end.
        public var maxDrops: Int?
        /// Seeds the jitter and the drops (nil: random); the timing still varies run to run.
        public var seed: UInt64?

        public init(
            latency: Duration = .zero, jitter: Duration = .zero, dropProbability: Double = 0,
            dropWithin: Duration = .seconds(1), maxDrops: Int? = nil, seed: UInt64? = nil
        ) {
            self.latency = latency
            self.jitter = jitter
            self.dropProbability = dropProbability
            self.dropWithin = dropWithin
            self.maxDrops = maxDrops
            self.seed = seed
        }
    }

    /// The proxy's counts when it stopped (its last line, JSON).
    public struct Stats: Sendable, Equatable, Decodable, CustomStringConvertible {
        public var accepted: Int
        public var open: Int
        /// Bytes forwarded client → server.
        public var bytesUp: Int
        /// Bytes forwarded server → client.
        public var bytesDown: Int
        public var swallowed: Int
        /// Connections the proxy reset, by any cause (also a server that refused the connection).
        public var resets: Int
        /// Connections reset by a random drop.
        public var dropped: Int

        enum CodingKeys: String, CodingKey {
            case accepted, open, swallowed, resets, dropped
            case bytesUp = "bytes_up"
            case bytesDown = "bytes_down"
        }

        public var description: String {
            "\(accepted) connections, \(dropped) dropped at random, \(resets) reset in all, "
                + "\(bytesUp) bytes up, \(bytesDown) bytes down"
        }
    }

    /// Why the proxy did not start or stop as it should: what it printed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    /// `http://127.0.0.1:PORT`: where clients connect instead of the server.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Holds the proxy's stdout (its two lines) and stderr.
    private let directory: URL
    /// The process and the write end of its stdin, kept open until ``stop()``: closing it (as
    /// the kernel does when this process dies) stops the proxy.
    private let child: Mutex<(process: Process, stdin: FileHandle)>

    private init(port: Int, directory: URL, process: sending Process, stdin: sending FileHandle) {
        self.port = port
        self.directory = directory
        child = Mutex((process, stdin))
    }

    /// Starts the proxy in front of `127.0.0.1:upstreamPort` and returns once it listens (at most
    /// 20 s, or a ``Failure`` with what it printed).
    public static func start(upstreamPort: Int, faults: Faults) async throws -> LossyLink {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lossy-link-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stdout = directory.appendingPathComponent("stdout.txt")
        let stderr = directory.appendingPathComponent("stderr.txt")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)

        let (executable, leading) = python()
        let process = Process()
        let stdin = Pipe()
        process.executableURL = executable
        process.arguments = leading + [script().path] + arguments(upstreamPort: upstreamPort, faults: faults)
        process.standardInput = stdin
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw Failure(description: "\(executable.path) \(process.arguments ?? []) did not start: \(error)")
        }
        let prefix = "fault proxy listening on 127.0.0.1:"
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let printed = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
            if let line = printed.split(separator: "\n").first, line.hasPrefix(prefix),
                let port = Int(line.dropFirst(prefix.count))
            {
                return LossyLink(
                    port: port, directory: directory, process: process, stdin: stdin.fileHandleForWriting)
            }
            if !process.isRunning || ContinuousClock.now >= deadline {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                let errors = (try? String(contentsOf: stderr, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: directory)
                throw Failure(
                    description: "the fault proxy did not print its address within 20 s "
                        + "(arguments \(process.arguments ?? [])): \(printed) \(errors)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Stops the proxy (the end of its stdin, then SIGTERM if it is still running 5 s later; it
    /// closes every connection) and returns its final counts (again on a later call).
    public func stop() async throws -> Stats {
        // Not both at once: a SIGTERM that arrives while the proxy is already exiting on the end
        // of its stdin finds Python's default handler back, and the proxy dies of it (status 15)
        // after printing its counts.
        let pid = child.withLock { child in
            try? child.stdin.close()
            return child.process.processIdentifier
        }
        let start = ContinuousClock.now
        var terminated = false
        while child.withLock({ $0.process.isRunning }) {
            let waited = ContinuousClock.now - start
            if !terminated, waited > .seconds(5) {
                terminated = true
                kill(pid, SIGTERM)
            }
            guard waited < .seconds(15) else {
                kill(pid, SIGKILL)
                throw Failure(
                    description: "the fault proxy did not exit within 15 s of the end of its stdin: \(output())")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let status = child.withLock { $0.process.terminationStatus }
        let printed = output()
        guard status == 0, let last = printed.stdout.split(separator: "\n").last,
            let stats = try? JSONDecoder().decode(Stats.self, from: Data(last.utf8))
        else {
            throw Failure(description: "the fault proxy exited with \(status), printing \(printed)")
        }
        return stats
    }

    deinit {
        child.withLock { child in
            if child.process.isRunning { kill(child.process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Launching

    private func output() -> (stdout: String, stderr: String) {
        func read(_ name: String) -> String {
            (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
        return (read("stdout.txt"), read("stderr.txt"))
    }

    /// The repository root: this file is Sources/Tools/TestSupport/LossyLink.swift.
    private static func root() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    private static func script() -> URL {
        root().appendingPathComponent("Tests/gateway/fault_proxy.py")
    }

    /// The repository's virtual environment (`scripts/install-deps`), else `python3` on the PATH;
    /// the proxy needs only the standard library.
    private static func python() -> (URL, [String]) {
        let venv = root().appendingPathComponent(".venv/bin/python")
        if FileManager.default.isExecutableFile(atPath: venv.path) { return (venv, []) }
        return (URL(fileURLWithPath: "/usr/bin/env"), ["python3"])
    }

    private static func arguments(upstreamPort: Int, faults: Faults) -> [String] {
        func seconds(_ duration: Duration) -> String {
            let (whole, fraction) = duration.components
            return String(Double(whole) + Double(fraction) / 1e18)
        }
        var arguments = [
            "--upstream", "127.0.0.1:\(upstreamPort)", "--latency", seconds(faults.latency), "--jitter",
            seconds(faults.jitter), "--drop", String(faults.dropProbability), "--drop-within",
            seconds(faults.dropWithin),
        ]
        if let maxDrops = faults.maxDrops { arguments += ["--max-drops", String(maxDrops)] }
        if let seed = faults.seed { arguments += ["--seed", String(seed)] }
        return arguments
    }
}
