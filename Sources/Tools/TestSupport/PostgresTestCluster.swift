import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The test process's own PostgreSQL server, started by the first test that needs it and stopped
/// when the process exits; every test gets a database of its own (``createDatabase()``).
///
/// Starting: `initdb` (from `pg_config --bindir`) into a fresh temporary directory with trust
/// authentication for the `postgres` role, then `pg_ctl -w start` listening on a free port of
/// 127.0.0.1 (and a Unix socket in that directory) with fsync on. initdb and postgres refuse to run
/// as root, so as root (here and in CI) they run as the `postgres` user through `runuser`, in a
/// directory that user owns. Without the server binaries every PostgreSQL test fails saying so —
/// none is skipped (`scripts/install-deps` installs `postgresql`).
///
/// Stopping: an `atexit` handler sends the postmaster `SIGQUIT` — an immediate shutdown, what
/// `pg_ctl stop -m immediate` sends — and removes the directory. A process that ends without
/// running it (SIGKILL, a crash, Ctrl-C) leaves the server orphaned for about a second: a watchdog
/// shell in a session of its own waits for this process to go and then does the same. As a last
/// resort, starting removes any leftover directory whose owning process is gone.
///
/// ```swift
/// let cluster = try await PostgresTestCluster.shared()
/// let database = try await cluster.createDatabase()
/// let store = try PostgresStore(url: cluster.url(database: database))
/// ```
public final class PostgresTestCluster: Sendable {
    /// Why the cluster could not be started, or a command failed: what ran and what it printed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The temporary directory: `data/` (the cluster), the server's socket and log, `owner.pid`.
    let directory: String
    let binDirectory: String
    public let port: Int

    private init(directory: String, binDirectory: String, port: Int) {
        self.directory = directory
        self.binDirectory = binDirectory
        self.port = port
    }

    /// Started once per process, on first use; a failure is kept and reported to every caller.
    private static let started = Result { () throws(Failure) -> PostgresTestCluster in try start() }

    /// The running cluster, started now if this is the first call.
    public static func shared() throws(Failure) -> PostgresTestCluster { try started.get() }

    /// The running cluster, started on ``commands`` if this is the first call, so that the waiting
    /// test does not hold a thread of Swift's cooperative pool: use this one from async code.
    public static func shared() async throws(Failure) -> PostgresTestCluster {
        try await onCommandQueue { () throws(Failure) in try started.get() }
    }

    /// The URL a ``PostgresStore`` connects to for `database` (TCP, role `postgres`, no password).
    public func url(database: String) -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    /// Creates an empty database with a new random name and returns the name.
    ///
    /// `psql` runs on ``commands``, not on the caller's thread: Swift Testing runs every test of the
    /// process at once on a cooperative pool as wide as the machine has cores (2 in CI). A few dozen
    /// tests blocking it with `CREATE DATABASE` (which PostgreSQL runs one at a time) once starved
    /// every other test's tasks for over 15 s on a loaded machine, and their waits ran out.
    public func createDatabase() async throws(Failure) -> String {
        let name = "t_" + UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(24)
        try await Self.onCommandQueue { () throws(Failure) in try self.psql("CREATE DATABASE \(name)") }
        return name
    }

    /// Drops a test's database, even while connections to it linger; best effort, and in the
    /// background (on ``commands``): nothing waits for it, and the cluster goes at exit anyway.
    public func dropDatabase(_ name: String) {
        Self.commands.async { _ = try? self.psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    }

    /// Where starting the cluster and creating and dropping databases run: one serial queue, whose
    /// thread is its own, outside the cooperative pool.
    private static let commands = DispatchQueue(label: "PostgresTestCluster.commands")

    /// Runs `work` on ``commands`` and waits for it without blocking the calling thread.
    private static func onCommandQueue<Value: Sendable>(
        _ work: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
            commands.async { continuation.resume(returning: Result { () throws(Failure) in try work() }) }
        }
        return try result.get()
    }

    /// Runs SQL through `psql` on `database` (stopping at the first error) and returns what it
    /// printed: unaligned rows, `|` between columns, no headers.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws(Failure) -> String {
        let local = binDirectory + "/psql"
        let executable = FileManager.default.isExecutableFile(atPath: local) ? local : "/usr/bin/psql"
        let result = try Self.run(
            executable,
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres",
                "-d", database, "-c", sql,
            ])
        guard result.status == 0 else {
            throw Failure(description: "psql -c \"\(sql)\" exited with \(result.status): \(result.errors)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Starting and stopping

    /// Temporary directories of this fixture start with this (leftovers are found by it).
    private static let prefix = "jetstream-store-tests-pg-"
    /// The directory the exit handler cleans up, once there is one.
    private static let running = Mutex<String?>(nil)
    /// Root runs the server as this user.
    private static let serverUser = "postgres"

    private static func start() throws(Failure) -> PostgresTestCluster {
        let binDirectory = try findBinDirectory()
        removeLeftovers()
        let directory = FileManager.default.temporaryDirectory.path + "/" + prefix + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try "\(getpid())\n".write(toFile: directory + "/owner.pid", atomically: true, encoding: .utf8)
        } catch {
            throw Failure(description: "cannot prepare \(directory) for PostgreSQL: \(error)")
        }
        running.withLock { $0 = directory }
        atexit { PostgresTestCluster.stopAtExit() }
        startWatchdog(directory: directory)
        if geteuid() == 0 {
            guard let user = getpwnam(serverUser) else {
                throw Failure(
                    description: "the tests run as root, and initdb/postgres refuse root, but there is no "
                        + "'\(serverUser)' user to run them as (install `postgresql`: scripts/install-deps)")
            }
            guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw Failure(description: "chown \(directory) to \(serverUser): \(String(cString: strerror(errno)))")
            }
        }
        let data = directory + "/data"
        // --no-sync only skips initdb's own flush of the new files; the server runs with fsync on.
        let initdb = try run(
            binDirectory + "/initdb",
            [
                "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync",
                "--no-instructions",
            ],
            asServerUser: true, in: directory)
        guard initdb.status == 0 else {
            throw Failure(description: "initdb exited with \(initdb.status):\n\(initdb.output)\(initdb.errors)")
        }
        var lastFailure = ""
        // A port found free can be taken before the server binds it: then another one.
        for _ in 1...3 {
            let port = try freePort()
            let options = [
                "-p \(port)", "-k \(directory)", "-c listen_addresses=127.0.0.1", "-c fsync=on",
                "-c synchronous_commit=on", "-c max_connections=300", "-c shared_buffers=32MB",
            ]
            // Not `run`: pg_ctl leaves the server running behind it (see `spawn`).
            let status = try spawn(
                [
                    binDirectory + "/pg_ctl", "-w", "-t", "120", "-D", data, "-l", directory + "/server.log", "-o",
                    options.joined(separator: " "), "start",
                ],
                asServerUser: true, in: directory, output: directory + "/pg_ctl.out")
            if status == 0 {
                return PostgresTestCluster(directory: directory, binDirectory: binDirectory, port: port)
            }
            let output = (try? String(contentsOfFile: directory + "/pg_ctl.out", encoding: .utf8)) ?? ""
            lastFailure = "pg_ctl start exited with \(status):\n\(output)"
        }
        let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "(no log)"
        throw Failure(description: "\(lastFailure)\nserver log:\n\(log.suffix(4000))")
    }

    /// `pg_config --bindir` when it names a directory holding initdb and pg_ctl.
    private static func findBinDirectory() throws(Failure) -> String {
        let missing =
            "PostgreSQL server binaries not found, and the PostgreSQL side of the store suites needs them: "
            + "install `postgresql` (scripts/install-deps does)"
        let candidates = ["/usr/bin/pg_config", "/usr/local/bin/pg_config", "/usr/lib/postgresql/15/bin/pg_config"]
        guard let pgConfig = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw Failure(description: "\(missing) (no pg_config in \(candidates))")
        }
        let result = try run(pgConfig, ["--bindir"])
        let directory = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0,
            ["initdb", "pg_ctl"].allSatisfy({ FileManager.default.isExecutableFile(atPath: directory + "/" + $0) })
        else {
            throw Failure(
                description: "\(missing) (`pg_config --bindir` says '\(directory)', which has no initdb/pg_ctl)")
        }
        return directory
    }

    /// A TCP port of 127.0.0.1 that nothing listens on right now.
    private static func freePort() throws(Failure) -> Int {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socketDescriptor, socketAddress, length) == 0
                    && getsockname(socketDescriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "no free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Shuts the server down and removes its directory (registered with `atexit`).
    private static func stopAtExit() {
        guard let directory = running.withLock({ $0 }) else { return }
        stopServer(in: directory)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Sends the postmaster of the cluster in `directory` SIGQUIT (immediate shutdown) and waits, at
    /// most 10 s, until it has removed its pid file (it is not our child: nothing to reap).
    private static func stopServer(in directory: String) {
        let pidFile = directory + "/data/postmaster.pid"
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let line = text.split(separator: "\n").first, let pid = pid_t(line.trimmingCharacters(in: .whitespaces)),
            pid > 0, kill(pid, SIGQUIT) == 0
        else { return }
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: pidFile), Date() < deadline { usleep(20_000) }
    }

    /// Stops and removes clusters that earlier test processes left behind (their `owner.pid` names a
    /// process that is gone); clusters of test processes still running are left alone.
    private static func removeLeftovers() {
        let root = FileManager.default.temporaryDirectory.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for name in names where name.hasPrefix(prefix) {
            let directory = root + "/" + name
            guard let text = try? String(contentsOfFile: directory + "/owner.pid", encoding: .utf8),
                let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                kill(owner, 0) != 0, errno == ESRCH
            else { continue }
            stopServer(in: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A shell in a session of its own (so Ctrl-C on the test run does not end it) that waits for this
    /// process to end and then stops the server and removes the directory, when the exit handler
    /// has not already: a test process killed outright leaves no server behind.
    private static func startWatchdog(directory: String) {
        let script = """
            while kill -0 "$1" 2>/dev/null; do sleep 1; done
            pidfile="$2/data/postmaster.pid"
            if [ -f "$pidfile" ]; then
                kill -QUIT "$(head -n 1 "$pidfile")" 2>/dev/null
                i=0
                while [ -f "$pidfile" ] && [ "$i" -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
            fi
            rm -rf "$2"
            """
        let shell = ["/bin/sh", "-c", script, "store-tests-postgres-watchdog", "\(getpid())", directory]
        // setsid -f forks the shell into a new session and returns at once. Without setsid(1) the
        // watchdog shares our session: it still covers SIGKILL and crashes.
        let setsid = "/usr/bin/setsid"
        let detached = FileManager.default.isExecutableFile(atPath: setsid) ? [setsid, "-f"] + shell : shell
        _ = try? spawn(detached, asServerUser: false, output: "/dev/null", wait: detached != shell)
    }

    // MARK: Running commands

    /// Runs `executable` to its end (at most `timeout` seconds) — as the server user through
    /// `runuser` when `asServerUser` and this process is root — and returns its exit status and
    /// what it printed. Output goes through files, not pipes: nothing can block on a full pipe.
    private static func run(
        _ executable: String, _ arguments: [String], asServerUser: Bool = false, in directory: String? = nil,
        timeout: TimeInterval = 180
    ) throws(Failure) -> (status: Int32, output: String, errors: String) {
        let command = try commandLine([executable] + arguments, asServerUser: asServerUser)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent(
            "store-tests-run-\(UUID().uuidString)")
        let outputPath = capture.path + ".out"
        let errorsPath = capture.path + ".err"
        defer {
            try? FileManager.default.removeItem(atPath: outputPath)
            try? FileManager.default.removeItem(atPath: errorsPath)
        }
        do {
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
            defer {
                try? output.close()
                try? errors.close()
            }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = errors
            try process.run()
        } catch {
            throw Failure(description: "cannot run \(command.joined(separator: " ")): \(error)")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw Failure(description: "\(command.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
        return (process.terminationStatus, output, errors)
    }

    /// Runs a command that leaves a process running behind it (`pg_ctl start` the server, `setsid -f`
    /// the watchdog), its output appended to `output`, and waits — at most `timeout` seconds — for
    /// the command itself when `wait`; returns its exit status (0 when not waited for). With
    /// `directory` it runs there (the test's own working directory may be closed to the server user).
    ///
    /// Not Foundation's `Process`: it learns that its child ended from a socket the child inherits,
    /// and everything the child starts inherits it too, so the server would keep that `Process`
    /// running until it stops. Here the child gets no descriptor of ours beyond 0–2.
    private static func spawn(
        _ arguments: [String], asServerUser: Bool, in directory: String? = nil, output: String, wait: Bool = true,
        timeout: TimeInterval = 180
    ) throws(Failure) -> Int32 {
        let inDirectory = directory.map { ["/bin/sh", "-c", #"cd "$1" && shift && exec "$@""#, "sh", $0] } ?? []
        let command = try commandLine(inDirectory + arguments, asServerUser: asServerUser)
        let shown = command.joined(separator: " ")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        closeDescriptorsFromThree(&actions)
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw Failure(description: "cannot run \(shown): \(String(cString: strerror(spawned)))")
        }
        guard wait else { return 0 }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                throw Failure(description: "\(shown) did not finish within \(Int(timeout)) s")
            }
            usleep(10_000)
        }
        // WIFEXITED / WEXITSTATUS; a signal shows as 128 + its number.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Adds "close every descriptor from 3 up" to `actions`: glibc's closefrom action (2.34+) when
    /// it has one, else a close of each descriptor open now.
    private static func closeDescriptorsFromThree(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    /// `arguments`, behind `runuser -u postgres --` when `asServerUser` and this process is root.
    private static func commandLine(_ arguments: [String], asServerUser: Bool) throws(Failure) -> [String] {
        guard asServerUser, geteuid() == 0 else { return arguments }
        let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let runuser else {
            throw Failure(description: "runuser not found: cannot run \(arguments[0]) as \(serverUser)")
        }
        return [runuser, "-u", serverUser, "--"] + arguments
    }
}
