import ArgumentParser
import Glibc
import HTTPServer
import Logging
import ServiceLifecycle
import SocketLoop
import UnixSignals

/// A tiny app on the engine for live tests and benchmarks of the engine alone (contract in
/// docs/engine.md). Prints `LISTENING <port>` once it accepts connections.
@main
struct HTTPTestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "HTTPTestServer", abstract: "Serves the engine's test routes on loopback.")

    @Option(help: "Address to listen on (IPv4 or IPv6 literal).") var host = "127.0.0.1"
    @Option(help: "TCP port; 0 picks a free one.") var port = 0
    @Option(help: "Event-loop threads (default: one per core).") var loops = SocketServerConfiguration.coreCount
    @Option(name: .customLong("max-body"), help: "Largest request body in bytes.") var maxBody = 1 << 20
    @Option(name: .customLong("header-timeout"), help: "Seconds to receive a request head.") var headerTimeout = 10.0
    @Option(name: .customLong("idle-timeout"), help: "Seconds an idle keep-alive connection stays open.")
    var idleTimeout = 60.0
    @Option(name: .customLong("min-body-rate"), help: "Bytes per second a body must average after the header timeout.")
    var minBodyRate = 1024
    @Option(name: .customLong("max-connections"), help: "Open connections at most (0: no bound).")
    var maxConnections = 0
    @Option(
        name: .customLong("max-buffered-body-bytes"), help: "Body bytes all connections may hold at once (0: no bound)."
    )
    var maxBufferedBodyBytes = 256 << 20
    @Option(name: .customLong("max-unsent-bytes"), help: "Per-request response bytes all connections may hold unsent.")
    var maxUnsentBytes = 256 << 20
    @Option(name: .customLong("heartbeat-interval"), help: "Seconds between SSE heartbeat comments.")
    var heartbeatInterval = 15.0
    @Option(name: .customLong("max-pending-bytes"), help: "Unsent bytes per connection before a stream is dropped.")
    var maxPendingBytes = 1 << 20
    @Option(name: .customLong("grace-period"), help: "Seconds allowed for in-flight work on shutdown.")
    var gracePeriod = 10.0
    @Option(name: .customLong("unix-socket"), help: "Also listen on this Unix socket path.") var unixSocket: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error.") var logLevel =
        "warning"

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "HTTPTestServer")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning

        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: host, port: port)], loopCount: loops)
        if let unixSocket { configuration.addresses.append(.unix(path: unixSocket)) }
        configuration.maxBodyBytes = maxBody
        configuration.headerReadTimeout = .seconds(headerTimeout)
        configuration.idleTimeout = .seconds(idleTimeout)
        configuration.minBodyBytesPerSecond = minBodyRate
        configuration.maxConnections = maxConnections
        configuration.maxBufferedBodyBytes = maxBufferedBodyBytes
        configuration.maxUnsentBytes = maxUnsentBytes
        configuration.heartbeatInterval = .seconds(heartbeatInterval)
        configuration.maxPendingBytes = maxPendingBytes
        configuration.gracePeriod = .seconds(gracePeriod)

        let box = ServerBox()
        let server = HTTPServer(
            configuration: configuration, router: TestRoutes.makeRouter(box: box), logger: logger)
        box.server = server
        try server.start()
        let port = server.boundPorts.first ?? 0
        let group = ServiceGroup(
            services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                await SignalReadiness.wait()
                print("LISTENING \(port)")
                fflush(nil)
            }
            try await tasks.waitForAll()
        }
    }
}
