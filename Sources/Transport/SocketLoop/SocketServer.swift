import CLinuxIO
import Glibc
import Logging
import Synchronization

/// A group of ``EventLoop`` threads accepting on the configured addresses: each loop has its own
/// `SO_REUSEPORT` listener per TCP address (the kernel spreads connections); a Unix socket is
/// shared by all loops. It knows nothing of HTTP: each accepted socket gets a handler from
/// `makeHandler`, called on the connection's loop.
///
/// ```swift
/// let server = SocketServer(configuration: configuration, logger: logger) { connection in Echo() }
/// let ports = try server.start()
/// // …
/// server.stop()
/// ```
public final class SocketServer: Sendable {
    public let configuration: SocketServerConfiguration
    let logger: Logger
    let makeHandler: @Sendable (Connection) -> any ConnectionHandler
    private let state = Mutex(State())

    private struct State {
        var loops: [EventLoop] = []
        var threads: [pthread_t] = []
        var sharedListeners: [Int32] = []
        var unixPaths: [String] = []
        var boundPorts: [Int] = []
        var isStopped = false
    }

    public init(
        configuration: SocketServerConfiguration, logger: Logger,
        makeHandler: @escaping @Sendable (Connection) -> any ConnectionHandler
    ) {
        self.configuration = configuration
        self.logger = logger
        self.makeHandler = makeHandler
    }

    /// The loops (empty before ``start()``).
    public var loops: [EventLoop] { state.withLock { $0.loops } }

    /// The TCP ports bound, one per TCP address in order (port 0 resolved).
    public var boundPorts: [Int] { state.withLock { $0.boundPorts } }

    /// Open connections over all loops.
    public var openConnections: Int { loops.reduce(0) { $0 + $1.openConnections } }

    /// Connections shed at the descriptor limit, and listener pauses, over every loop since start.
    public var descriptorLimitCounts: (shed: Int, pauses: Int) {
        loops.reduce((0, 0)) { total, loop in
            let counts = loop.descriptorLimitCounts
            return (total.0 + counts.shed, total.1 + counts.pauses)
        }
    }

    /// Connections closed because their peer took none of their unsent bytes for the send
    /// timeout (``SocketServerConfiguration/sendTimeout``), over every loop since start.
    public var stalledConnections: Int {
        loops.reduce(0) { $0 + $1.stalledConnectionsTotal.load(ordering: .relaxed) }
    }

    /// Binds every address, starts the loop threads and begins accepting. Returns the TCP ports.
    @discardableResult
    public func start() throws -> [Int] {
        signal(SIGPIPE, SIG_IGN)
        let count = max(configuration.loopCount, 1)
        var loops: [EventLoop] = []
        for index in 0..<count {
            loops.append(
                try EventLoop(
                    index: index, maxPendingBytes: configuration.maxPendingBytes,
                    lingerTimeout: configuration.lingerTimeout,
                    logger: logger, makeHandler: makeHandler))
        }
        if configuration.maxConnections > 0 {
            // Each loop takes its share (rounded up): the kernel spreads accepts over the loops.
            let share = (configuration.maxConnections + count - 1) / count
            for loop in loops { loop.maxConnections = share }
        }
        for loop in loops { loop.sendTimeout = configuration.sendTimeout }
        var perLoop = [[(Int32, Bool)]](repeating: [], count: count)
        var ports: [Int] = []
        var shared: [Int32] = []
        var unixPaths: [String] = []
        do {
            for address in configuration.addresses {
                switch address {
                case .tcp(let host, let port):
                    try ListenerSocket.checkUnused(host: host, port: port)
                    var resolvedPort = port
                    for index in 0..<count {
                        let (descriptor, bound) = try ListenerSocket.makeTCP(host: host, port: resolvedPort)
                        resolvedPort = bound
                        perLoop[index].append((descriptor, false))
                    }
                    ports.append(resolvedPort)
                case .unix(let path):
                    let descriptor = try ListenerSocket.makeUnix(path: path)
                    shared.append(descriptor)
                    unixPaths.append(path)
                    for index in 0..<count { perLoop[index].append((descriptor, true)) }
                }
            }
        } catch {
            for descriptors in perLoop {
                for (descriptor, isShared) in descriptors where !isShared { close(descriptor) }
            }
            for descriptor in shared { close(descriptor) }
            throw error
        }
        for (index, loop) in loops.enumerated() {
            for (descriptor, isShared) in perLoop[index] { loop.addListener(descriptor, isShared: isShared) }
        }
        var threads: [pthread_t] = []
        for loop in loops {
            threads.append(try LoopThread.spawn(loop))
        }
        state.withLock {
            $0.loops = loops
            $0.threads = threads
            $0.sharedListeners = shared
            $0.unixPaths = unixPaths
            $0.boundPorts = ports
        }
        return ports
    }

    /// Stops accepting new connections; open ones continue. Returns once every loop has stopped
    /// accepting. Safe from any thread, including a loop thread.
    public func stopAccepting() {
        let loops = self.loops
        let done = Atomic<Int>(0)
        let semaphore = LoopSemaphore()
        for loop in loops {
            // On a loop thread, do this loop's part now: waiting for it would deadlock.
            loop.executeOrRunNow {
                loop.removeListeners()
                if done.add(1, ordering: .acquiringAndReleasing).newValue == loops.count { semaphore.signal() }
            }
        }
        if !loops.isEmpty { semaphore.wait() }
        let (shared, paths) = state.withLock { state in
            defer {
                state.sharedListeners = []
                state.unixPaths = []
            }
            return (state.sharedListeners, state.unixPaths)
        }
        for descriptor in shared { close(descriptor) }
        for path in paths { unlink(path) }
    }

    /// Runs `body` on every loop thread with each loop's open connections.
    public func forEachConnection(_ body: @escaping @Sendable (Connection) -> Void) {
        for loop in loops {
            loop.execute { for connection in loop.allConnections { body(connection) } }
        }
    }

    /// Closes every connection, stops the loop threads and waits for them to exit.
    public func stop() {
        let (loops, threads) = state.withLock { state in
            defer {
                state.isStopped = true
                state.threads = []
            }
            return (state.loops, state.threads)
        }
        if !loops.isEmpty, !state.withLock({ $0.sharedListeners.isEmpty && $0.unixPaths.isEmpty }) {
            stopAccepting()
        }
        for loop in loops { loop.requestStop() }
        for thread in threads { pthread_join(thread, nil) }
    }
}

/// The process's open-file limit. `jetstream serve` and `jetstream bench` raise the soft limit to
/// the hard one at start (as Go's runtime and nginx's `worker_rlimit_nofile` do), because ten
/// thousand streams need ten thousand descriptors and Debian's default soft limit is 1024.
///
/// ```swift
/// let limit = FileDescriptorLimit.raiseToHardLimit()   // e.g. 1048576
/// ```
public enum FileDescriptorLimit {
    /// Raises the soft RLIMIT_NOFILE to the hard limit and returns the soft limit now in force.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
