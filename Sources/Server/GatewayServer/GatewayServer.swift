import Foundation
import Gateway
import HTTPServer
import JetstreamModel
import Logging
import PostgresStore
import ScopeEngine
import ServiceLifecycle
import SocketLoop
import Store
import UnixSignals

/// A running gateway, assembled from a ``GatewayServerConfiguration``: the store opened and
/// recovered, the engine, the HTTP routes, metrics and access control, listening. `jetstream
/// serve` runs one; tests start one in-process on an ephemeral port.
///
/// ```swift
/// var configuration = GatewayServerConfiguration(dataDirectory: directory)
/// configuration.port = 0
/// let server = try await GatewayServer.start(configuration, logger: logger)
/// print("listening on \(server.port)")
/// …
/// await server.stop()                 // or: try await server.run() until SIGTERM
/// ```
public final class GatewayServer: Sendable {
    public let configuration: GatewayServerConfiguration
    public let engine: ScopeEngine
    public let gateway: Gateway
    public let http: HTTPServer
    public let store: any ChangeLogStore
    let logger: Logger
    /// Scopes and change sets replayed from the store at start.
    public let recovered: (scopes: Int, replayed: Int)

    /// Opens the store, recovers every scope, builds the routes and starts listening.
    public static func start(_ configuration: GatewayServerConfiguration, logger: Logger) async throws -> GatewayServer
    {
        let store = try openStore(configuration, logger: Logger(label: "\(logger.label).store"))
        do {
            return try await GatewayServer(configuration: configuration, store: store, logger: logger)
        } catch {
            store.close()
            throw error
        }
    }

    /// The shared PostgreSQL store with a database URL, else the embedded SQLite store. `readsOnly`
    /// opens an existing PostgreSQL store without creating or migrating anything.
    static func openStore(
        _ configuration: GatewayServerConfiguration, readsOnly: Bool = false, logger: Logger
    ) throws -> any ChangeLogStore {
        let idempotencyTTL = Int64((configuration.idempotencyTTL / .milliseconds(1)).rounded())
        if let url = configuration.databaseURL {
            var storeConfiguration = PostgresStore.Configuration()
            storeConfiguration.retainedChangeSets = configuration.historyLimit
            storeConfiguration.idempotencyTTLMilliseconds = idempotencyTTL
            storeConfiguration.writerConnections = configuration.databaseWriters
            storeConfiguration.pollInterval = configuration.databasePollInterval
            storeConfiguration.unavailableAfter = configuration.databaseTimeout
            storeConfiguration.readsOnly = readsOnly
            return try PostgresStore(url: url, configuration: storeConfiguration, logger: logger)
        }
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        var storeConfiguration = SQLiteStore.Configuration()
        storeConfiguration.retainedChangeSets = configuration.historyLimit
        storeConfiguration.idempotencyTTLMilliseconds = idempotencyTTL
        return try SQLiteStore(path: configuration.storePath, configuration: storeConfiguration, logger: logger)
    }

    private init(configuration: GatewayServerConfiguration, store: any ChangeLogStore, logger: Logger) async throws {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        let metrics = GatewayMetrics()
        var engineConfiguration = ScopeEngineConfiguration(
            schema: configuration.schema ?? .demo, limits: configuration.limits.model,
            historyLimit: configuration.historyLimit, resumeBufferSize: configuration.resumeBufferSize,
            snapshotInterval: configuration.snapshotInterval, maxHistoryPage: configuration.limits.maxHistoryPage)
        Gateway.prepare(&engineConfiguration, metrics: metrics)
        engineConfiguration.idempotencyTTLMilliseconds = Int64(
            (configuration.idempotencyTTL / .milliseconds(1)).rounded())
        engineConfiguration.maxPresenceMembers = configuration.maxPresenceMembers
        if let shared = store as? any SharedChangeLogStore {
            engineConfiguration.conflictRetries = configuration.conflictRetries
            metrics.observe(sharedStore: { shared.statistics })
        }
        // Presence across nodes: each change is a NOTIFY of its own (docs/store.md).
        let presenceRelay = (store as? PostgresStore).map { postgres in
            BroadcastPresenceRelay(send: { postgres.publishPresence($0) }, receive: { postgres.followPresence($0) })
        }
        engineConfiguration.presenceRelay = presenceRelay
        engine = ScopeEngine(configuration: engineConfiguration, store: store, logger: logger)
        let started = ContinuousClock.now
        recovered = try await engine.recover()
        logger.info(
            "store recovered",
            metadata: [
                "store": "\((store as? PostgresStore)?.target.description ?? configuration.storePath)",
                "scopes": "\(recovered.scopes)",
                "replayed": "\(recovered.replayed)", "duration": "\(ContinuousClock.now - started)",
            ])
        // On a shared database, other nodes' commits arrive from now on (and everything since the
        // recovery read is compared at once).
        engine.followSharedStore()
        await engine.watchNodeSchemas()
        presenceRelay?.follow { [weak engine] in engine?.applyRemotePresence($0) }
        if configuration.schema == nil { try await engine.ensureScope(named: "demo") }

        var policy = configuration.access
        policy.maxStreams = configuration.limits.maxStreams
        policy.maxStreamsPerClient = configuration.limits.maxStreamsPerClient
        policy.maxScopesPerStream = configuration.limits.maxScopesPerStream
        let access: AccessControl
        do {
            access = try await AccessControl.make(policy: policy)
        } catch {
            throw AccessPolicyError(message: "\(error)")
        }
        logger.log(level: policy.auth.isEnabled ? .info : .warning, "\(access.summary)")
        gateway = Gateway(
            engine: engine, access: access, metrics: metrics, retryMilliseconds: configuration.retryMilliseconds,
            methods: configuration.methods, methodHooks: configuration.methodHooks)
        var router = Router()
        gateway.addRoutes(to: &router)
        http = HTTPServer(
            configuration: Self.httpConfiguration(configuration, gateway: gateway), router: router, logger: logger)
        metrics.observe(http)
        try http.start()
    }

    /// The port the server listens on (the chosen one when the configuration asked for 0).
    public var port: Int { http.boundPorts.first ?? configuration.port }

    /// Serves until a graceful shutdown (SIGTERM/SIGINT with `signals`, or the task's cancellation):
    /// readiness turns false and every stream gets `closing`, then after the drain delay the
    /// listener closes and requests in flight finish within the grace period; the store closes last.
    public func run(
        signals: [UnixSignal] = [.sigterm, .sigint], announce: (@Sendable () -> Void)? = nil
    ) async throws {
        var services: [any Service] = [http, GatewayDrainService(engine: engine, drainDelay: configuration.drainDelay)]
        if let announce { services.append(StartupAnnouncement(announce: announce)) }
        let group = ServiceGroup(services: services, gracefulShutdownSignals: signals, logger: logger)
        try await group.run()
        await engine.withdrawNodeSchema()
        store.close()
        logger.info("stopped")
    }

    /// Stops a server started with ``start(_:logger:)`` that is not ``run(signals:announce:)``:
    /// streams get `closing`, the listener closes, then the store.
    public func stop() async {
        engine.beginDrain()
        await http.shutdown()
        await engine.withdrawNodeSchema()
        store.close()
    }

    static func httpConfiguration(
        _ configuration: GatewayServerConfiguration, gateway: Gateway
    ) -> HTTPServerConfiguration {
        var http = HTTPServerConfiguration(
            addresses: [.tcp(host: configuration.host, port: configuration.port)], loopCount: configuration.loops)
        configuration.limits.apply(to: &http)
        http.heartbeatInterval = configuration.heartbeatInterval
        http.slowSubscriberEvent = Problem.slowSubscriberEvent(maxPendingBytes: configuration.limits.maxPendingBytes)
        http.gracePeriod = configuration.gracePeriod
        http.serverName = "jetstream"
        http.errorResponse = Problem.engineResponse
        http.responseHeaders = gateway.corsResponseHeaders
        let metrics = gateway.metrics
        if configuration.accessLog {
            let trusted = gateway.access.policy.trustedProxies
            let accessLogger = Logger(label: "jetstream.access")
            http.accessLog = { entry in
                metrics.recordRequest(entry)
                let client = ClientAddress.resolve(
                    peer: entry.remoteAddress, forwardedFor: entry.forwardedFor, forwarded: entry.forwarded,
                    trusted: trusted)
                var metadata: Logger.Metadata = [
                    "client": "\(client)", "bytes": "\(entry.bodyBytes)", "stream": "\(entry.streamed)",
                    "ms": "\(milliseconds(entry.duration))",
                ]
                // Answered before routing (a malformed or smuggling head, a limit, a deadline).
                if let reason = entry.rejection { metadata["rejected"] = "\(reason)" }
                accessLogger.info(
                    "\(entry.method) \(entry.target) \(entry.version) \(entry.status)", metadata: metadata)
            }
        } else {
            http.accessLog = { entry in metrics.recordRequest(entry) }
        }
        return http
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}

/// The access policy cannot be used (a key that does not load, a JWKS file that does not parse).
public struct AccessPolicyError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// A service that runs `announce` once the `ServiceGroup` is running and SIGTERM and SIGINT are
/// caught (libdispatch installs the handlers asynchronously; see ``SignalReadiness``), then waits
/// for shutdown.
///
/// ```swift
/// ServiceGroup(services: [server, StartupAnnouncement { print("listening") }], …)
/// ```
struct StartupAnnouncement: Service {
    let announce: @Sendable () -> Void

    func run() async throws {
        await SignalReadiness.wait()
        announce()
        try? await gracefulShutdown()
    }
}
