import Logging
import ServiceLifecycle
import SocketLoop
import Synchronization

/// An HTTP/1.1 server on the engine's own epoll loops (no SwiftNIO), runnable as a
/// swift-service-lifecycle `Service`: on graceful shutdown (SIGTERM/SIGINT through a
/// `ServiceGroup`) it stops accepting, lets requests in flight finish, ends event streams and
/// closes what remains after ``HTTPServerConfiguration/gracePeriod``.
///
/// ```swift
/// var router = Router()
/// router.get("/health") { _, _ in .text("ok") }
/// let server = HTTPServer(configuration: .init(addresses: [.tcp(host: "::", port: 8080)]),
///                         router: router, logger: Logger(label: "http"))
/// let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint],
///                          logger: logger)
/// try await group.run()
/// ```
public final class HTTPServer: Service, Sendable {
    public let configuration: HTTPServerConfiguration
    let core: ServerCore
    let sockets: SocketServer
    private let lifecycle = Mutex(Lifecycle())
    private let shutdownSignal: AsyncStream<Void>
    private let shutdownTrigger: AsyncStream<Void>.Continuation

    private struct Lifecycle {
        var isStarted = false
        var shutdown: Task<Void, Never>?
    }

    public convenience init(configuration: HTTPServerConfiguration, router: Router, logger: Logger) {
        self.init(
            core: ServerCore(
                configuration: configuration, router: router, logger: logger, http2: H2CConnectionFactory()))
    }

    init(core: ServerCore) {
        configuration = core.configuration
        self.core = core
        var socketConfiguration = SocketServerConfiguration(
            addresses: core.configuration.addresses, loopCount: core.configuration.loopCount,
            maxPendingBytes: core.configuration.maxPendingBytes)
        socketConfiguration.maxConnections = core.configuration.maxConnections
        // A peer that takes none of a response for the idle timeout is gone or hostile.
        socketConfiguration.sendTimeout = core.configuration.idleTimeout
        sockets = SocketServer(configuration: socketConfiguration, logger: core.logger) { connection in
            HTTP1ConnectionHandler(connection: connection, core: core)
        }
        (shutdownSignal, shutdownTrigger) = AsyncStream<Void>.makeStream()
    }

    /// Binds the addresses and starts the loops (idempotent). ``run()`` calls it; call it first
    /// yourself to learn the ports before running.
    public func start() throws {
        let startedNow = try lifecycle.withLock { state in
            guard !state.isStarted else { return false }
            try sockets.start()
            state.isStarted = true
            return true
        }
        guard startedNow else { return }
        core.logger.info(
            "HTTP server listening",
            metadata: ["addresses": "\(configuration.addresses)", "ports": "\(sockets.boundPorts)"])
    }

    /// The TCP ports bound, in the order of the TCP addresses (port 0 resolved).
    public var boundPorts: [Int] { sockets.boundPorts }

    /// The event loops (for example to run loop-confined work).
    public var loops: [EventLoop] { sockets.loops }

    /// Live counters.
    public var stats: HTTPServerStats {
        HTTPServerStats(
            openConnections: sockets.openConnections,
            openStreams: core.stats.openStreams.load(ordering: .relaxed),
            droppedSlowSubscribers: core.stats.droppedSlowSubscribers.load(ordering: .relaxed),
            requests: core.stats.requests.load(ordering: .relaxed),
            rejectedBeforeRouting: core.stats.rejected.load(ordering: .relaxed),
            shedConnections: sockets.descriptorLimitCounts.shed,
            listenerPauses: sockets.descriptorLimitCounts.pauses,
            stalledConnections: sockets.stalledConnections,
            unsentResponseBytes: core.unsentBudget.heldBytes)
    }

    /// Starts if needed, serves until graceful shutdown or cancellation, then shuts down.
    public func run() async throws {
        try start()
        await withGracefulShutdownHandler {
            for await _ in shutdownSignal {}
        } onGracefulShutdown: { [shutdownTrigger] in
            shutdownTrigger.finish()
        }
        await shutdown()
    }

    /// Shuts down gracefully (idempotent; every caller waits for the end): stop accepting, let
    /// in-flight requests finish and streams end, close the rest after the grace period, stop the
    /// loops.
    public func shutdown() async {
        let task = lifecycle.withLock { state in
            if let existing = state.shutdown { return existing }
            let sockets = self.sockets
            let grace = configuration.gracePeriod
            let logger = core.logger
            let isStarted = state.isStarted
            let created = Task {
                guard isStarted else { return }
                await Self.drain(sockets: sockets, gracePeriod: grace, logger: logger)
            }
            state.shutdown = created
            return created
        }
        shutdownTrigger.finish()
        await task.value
    }

    private static func drain(sockets: SocketServer, gracePeriod: Duration, logger: Logger) async {
        logger.info("HTTP server shutting down", metadata: ["open": "\(sockets.openConnections)"])
        sockets.stopAccepting()
        sockets.forEachConnection { connection in connection.handler?.connectionShouldQuiesce(connection) }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: gracePeriod)
        while sockets.openConnections > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let remaining = sockets.openConnections
        if remaining > 0 {
            logger.warning("grace period over: closing connections", metadata: ["open": "\(remaining)"])
        }
        sockets.stop()
        logger.info("HTTP server stopped")
    }
}

/// Live counters of a running server (relaxed atomics, read from any thread).
final class ServerStats: Sendable {
    let openStreams = Atomic<Int>(0)
    let droppedSlowSubscribers = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    /// Requests answered before routing (400, 408, 413, 414, 431, …: the parser or a deadline).
    let rejected = Atomic<Int>(0)
}

/// A snapshot of a server's counters.
///
/// ```swift
/// let stats = server.stats
/// print(stats.openConnections, stats.openStreams, stats.droppedSlowSubscribers)
/// ```
public struct HTTPServerStats: Sendable, Hashable {
    public var openConnections: Int
    public var openStreams: Int
    /// Event streams closed because their unsent bytes exceeded the cap.
    public var droppedSlowSubscribers: Int
    /// Requests dispatched to handlers since start.
    public var requests: Int
    /// Requests answered before routing since start: malformed or smuggling heads (400), too large
    /// (413, 414, 431), too slow (408). Each also reaches the access log with its reason.
    public var rejectedBeforeRouting: Int = 0
    /// Connections accepted and closed at once at the descriptor limit, since start.
    public var shedConnections: Int = 0
    /// Times a listener was paused at the descriptor limit, since start.
    public var listenerPauses: Int = 0
    /// Connections closed because the peer took none of their unsent bytes for the idle timeout.
    public var stalledConnections: Int = 0
    /// Bytes of per-request response bodies held unsent now (``HTTPServerConfiguration/maxUnsentBytes``).
    public var unsentResponseBytes: Int = 0
}
