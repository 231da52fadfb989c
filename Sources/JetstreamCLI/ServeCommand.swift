import ArgumentParser
import Foundation
import Gateway
import HTTPServer
import JetstreamModel
import Logging
import ServiceLifecycle
import SocketLoop
import Store
import UnixSignals

/// `jetstream serve`: the gateway. With no arguments it serves the built-in demo schema (a canvas
/// of shapes, scope `demo`) on 127.0.0.1:8080 and stores in `./jetstream-data`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve scopes over HTTP (REST + Server-Sent Events).",
        discussion: """
            Every option can also be set with the environment variable named in its help, or in a \
            YAML file given with --config (keys are the option names). Precedence: flags, then the \
            environment, then the file, then the defaults.
            """)

    @Option(help: "YAML file of serve options (keys are the option names). [JETSTREAM_CONFIG]")
    var config: String?
    @Flag(help: "Print the effective configuration as YAML and exit.")
    var printConfig = false

    @Option(help: "Address to listen on; '::' for all IPv6 and IPv4 addresses. [JETSTREAM_HOST]")
    var host = EnvironmentDefault.value("JETSTREAM_HOST", "127.0.0.1")
    @Option(help: "TCP port; 0 picks a free one. [JETSTREAM_PORT]")
    var port = EnvironmentDefault.value("JETSTREAM_PORT", 8080)
    @Option(help: "Directory of the embedded store. [JETSTREAM_DATA_DIR]")
    var dataDir = EnvironmentDefault.value("JETSTREAM_DATA_DIR", "./jetstream-data")
    @Option(
        name: .customLong("schema"),
        help: "Model schema file (YAML or JSON); the demo schema when absent. [JETSTREAM_SCHEMA]")
    var schemaFlag: String?
    /// `--schema`, else `JETSTREAM_SCHEMA`, else the config file's `schema`.
    var schema: String? { schemaFlag ?? EnvironmentDefault.string("JETSTREAM_SCHEMA") }
    @Option(help: "Seconds between SSE keep-alive comments. [JETSTREAM_HEARTBEAT_INTERVAL]")
    var heartbeatInterval = EnvironmentDefault.value("JETSTREAM_HEARTBEAT_INTERVAL", 15.0)
    @Option(help: "Change sets retained per scope for history and resume. [JETSTREAM_HISTORY_LIMIT]")
    var historyLimit = EnvironmentDefault.value("JETSTREAM_HISTORY_LIMIT", 10_000)
    @Option(help: "Recent change sets per scope kept encoded in memory for resumes. [JETSTREAM_RESUME_BUFFER]")
    var resumeBuffer = EnvironmentDefault.value("JETSTREAM_RESUME_BUFFER", 256)
    @Option(help: "A snapshot every this many change sets (bounds restart time). [JETSTREAM_SNAPSHOT_INTERVAL]")
    var snapshotInterval = EnvironmentDefault.value("JETSTREAM_SNAPSHOT_INTERVAL", 1000)
    @Option(help: "Event-loop threads (default: one per core). [JETSTREAM_LOOPS]")
    var loops = EnvironmentDefault.value("JETSTREAM_LOOPS", SocketServerConfiguration.coreCount)
    @Option(help: "Largest request body in bytes. [JETSTREAM_MAX_BODY_BYTES]")
    var maxBodyBytes = EnvironmentDefault.value("JETSTREAM_MAX_BODY_BYTES", 1 << 20)
    @Option(help: "Largest request head in bytes. [JETSTREAM_MAX_HEADER_BYTES]")
    var maxHeaderBytes = EnvironmentDefault.value("JETSTREAM_MAX_HEADER_BYTES", 16 << 10)
    @Option(help: "Most fragments in one change set. [JETSTREAM_MAX_FRAGMENTS]")
    var maxFragments = EnvironmentDefault.value("JETSTREAM_MAX_FRAGMENTS", 1000)
    @Option(help: "Most objects in one scope. [JETSTREAM_MAX_OBJECTS]")
    var maxObjects = EnvironmentDefault.value("JETSTREAM_MAX_OBJECTS", 100_000)
    @Option(help: "Seconds a client has to send a request head. [JETSTREAM_HEADER_TIMEOUT]")
    var headerTimeout = EnvironmentDefault.value("JETSTREAM_HEADER_TIMEOUT", 10.0)
    @Option(help: "Seconds an idle keep-alive connection stays open. [JETSTREAM_IDLE_TIMEOUT]")
    var idleTimeout = EnvironmentDefault.value("JETSTREAM_IDLE_TIMEOUT", 60.0)
    @Option(help: "Unsent bytes per SSE stream before the subscriber is dropped. [JETSTREAM_MAX_PENDING_BYTES]")
    var maxPendingBytes = EnvironmentDefault.value("JETSTREAM_MAX_PENDING_BYTES", 1 << 20)
    @Option(help: "Seconds in-flight work may take on shutdown. [JETSTREAM_GRACE_PERIOD]")
    var gracePeriod = EnvironmentDefault.value("JETSTREAM_GRACE_PERIOD", 10.0)
    @Option(
        help:
            "Seconds between readiness turning false (streams closed) and the listener closing on SIGTERM. [JETSTREAM_DRAIN_DELAY]"
    )
    var drainDelay = EnvironmentDefault.value("JETSTREAM_DRAIN_DELAY", 0.0)
    @Option(help: "Seconds an Idempotency-Key and its outcome are kept. [JETSTREAM_IDEMPOTENCY_TTL]")
    var idempotencyTTL = EnvironmentDefault.value("JETSTREAM_IDEMPOTENCY_TTL", 86_400.0)
    @Flag(inversion: .prefixedNo, help: "One log line per request (label jetstream.access). [JETSTREAM_ACCESS_LOG]")
    var accessLog = EnvironmentDefault.value("JETSTREAM_ACCESS_LOG", true)
    @Option(help: "Log format: text or json. [JETSTREAM_LOG_FORMAT]")
    var logFormat = EnvironmentDefault.value("JETSTREAM_LOG_FORMAT", "text")
    @Option(help: "Log level: trace, debug, info, notice, warning, error. [JETSTREAM_LOG_LEVEL]")
    var logLevel = EnvironmentDefault.value("JETSTREAM_LOG_LEVEL", "info")
    @OptionGroup(title: "Auth, CORS, proxies and limits")
    var accessOptions: AccessOptions

    func validate() throws {
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level \(logLevel) is unknown")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard historyLimit >= 1 else { throw ValidationError("--history-limit must be at least 1") }
        guard resumeBuffer >= 0 else { throw ValidationError("--resume-buffer must be ≥ 0") }
        guard loops >= 1 else { throw ValidationError("--loops must be at least 1") }
        guard heartbeatInterval > 0 else { throw ValidationError("--heartbeat-interval must be positive") }
        guard drainDelay >= 0 else { throw ValidationError("--drain-delay must be ≥ 0") }
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must be ≥ 0") }
        guard idempotencyTTL > 0 else { throw ValidationError("--idempotency-ttl must be positive") }
        try validateConfigFile()
    }

    func run() async throws {
        if printConfig {
            print(effectiveConfigurationYAML(), terminator: "")
            return
        }
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "jetstream")
        let descriptorLimit = FileDescriptorLimit.raiseToHardLimit()
        if descriptorLimit < accessOptions.maxStreams + 1024 {
            logger.warning(
                "the open-file limit is below --max-streams + 1024: streams beyond it will be refused",
                metadata: ["limit": "\(descriptorLimit)", "max-streams": "\(accessOptions.maxStreams)"])
        }

        let modelSchema = try loadSchema(logger: logger)
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        var storeConfiguration = SQLiteStore.Configuration()
        storeConfiguration.retainedChangeSets = historyLimit
        storeConfiguration.idempotencyTTLMilliseconds = Int64((idempotencyTTL * 1000).rounded())
        let storePath = (dataDir as NSString).appendingPathComponent("jetstream.sqlite")
        let store = try SQLiteStore(
            path: storePath, configuration: storeConfiguration, logger: Logger(label: "jetstream.store"))
        defer { store.close() }

        var limits = Limits()
        limits.maxFragmentsPerSet = maxFragments
        limits.maxObjectsPerScope = maxObjects
        let hub = ScopeHub(
            configuration: GatewayConfiguration(
                schema: modelSchema, limits: limits, historyLimit: historyLimit, resumeBufferSize: resumeBuffer,
                snapshotInterval: snapshotInterval),
            store: store, logger: logger)
        let started = ContinuousClock.now
        let (scopes, replayed) = try await hub.recover()
        logger.info(
            "store recovered",
            metadata: [
                "path": "\(storePath)", "scopes": "\(scopes)", "replayed": "\(replayed)",
                "duration": "\(ContinuousClock.now - started)",
            ])
        if schema == nil { try await hub.ensureDemoScope() }

        let access: AccessControl
        do {
            access = try await AccessControl.make(policy: try accessOptions.policy(maxFragments: maxFragments))
        } catch {
            logger.critical("cannot configure auth", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        }
        let authLevel: Logger.Level = access.policy.auth.isEnabled ? .info : .warning
        logger.log(level: authLevel, "\(access.summary)")
        let gateway = Gateway(hub: hub, access: access)
        var router = Router()
        gateway.addRoutes(to: &router)
        var configuration = httpConfiguration(access: access, metrics: hub.metrics)
        configuration.responseHeaders = gateway.corsResponseHeaders
        let server = HTTPServer(configuration: configuration, router: router, logger: logger)
        hub.metrics.observe(server)
        try server.start()
        let boundPort = server.boundPorts.first ?? port
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let schemaName = schema ?? "built-in demo"
        // Announced from inside the group, once SIGTERM is trapped: a supervisor that signals
        // right after the line gets a graceful shutdown, never the default kill.
        let announcement = StartupAnnouncement {
            print("jetstream listening on http://\(shownHost):\(boundPort)")
            fflush(nil)
            logger.info(
                "serving", metadata: ["address": "http://\(shownHost):\(boundPort)", "schema": "\(schemaName)"])
        }

        // Shut down in reverse: the drain (readiness false, streams closed) before the server.
        let drain = GatewayDrainService(hub: hub, drainDelay: .seconds(drainDelay))
        let group = ServiceGroup(
            services: [server, drain, announcement], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
        logger.info("stopped")
    }

    private func loadSchema(logger: Logger) throws -> Schema {
        guard let schema else { return .demo }
        do {
            return try Schema.load(from: URL(fileURLWithPath: schema))
        } catch {
            logger.critical("cannot load the schema", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        }
    }

    private func httpConfiguration(access: AccessControl, metrics: GatewayMetrics) -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: host, port: port)], loopCount: loops)
        configuration.maxBodyBytes = maxBodyBytes
        configuration.maxHeaderBytes = maxHeaderBytes
        configuration.headerReadTimeout = .seconds(headerTimeout)
        configuration.idleTimeout = .seconds(idleTimeout)
        configuration.heartbeatInterval = .seconds(heartbeatInterval)
        configuration.maxPendingBytes = maxPendingBytes
        configuration.slowSubscriberEvent = Problem.slowSubscriberEvent(maxPendingBytes: maxPendingBytes)
        configuration.gracePeriod = .seconds(gracePeriod)
        configuration.serverName = "jetstream"
        configuration.errorResponse = Problem.engineResponse
        if accessLog {
            let trusted = access.policy.trustedProxies
            let accessLogger = Logger(label: "jetstream.access")
            configuration.accessLog = { entry in
                metrics.recordRequest(entry)
                let client = ClientAddress.resolve(
                    peer: entry.remoteAddress, forwardedFor: entry.forwardedFor, forwarded: entry.forwarded,
                    trusted: trusted)
                accessLogger.info(
                    "\(entry.method) \(entry.target) \(entry.version) \(entry.status)",
                    metadata: [
                        "client": "\(client)", "bytes": "\(entry.bodyBytes)", "stream": "\(entry.streamed)",
                        "ms": "\(Self.milliseconds(entry.duration))",
                    ])
            }
        } else {
            configuration.accessLog = { entry in metrics.recordRequest(entry) }
        }
        return configuration
    }
}

extension ServeCommand {
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return String(format: "%.3f", value)
    }
}
