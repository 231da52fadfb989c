import ArgumentParser
import Foundation
import Gateway
import GatewayServer
import HTTPServer
import JetstreamModel
import Logging
import ScopeEngine
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
        name: .customLong("database-url"),
        help: ArgumentHelp(
            "PostgreSQL to store in instead of --data-dir: every node given the same database serves the same scopes. [JETSTREAM_DATABASE_URL]",
            discussion:
                "A libpq URI (postgres://user@host:5432/db) or key=value string; the password may also come from PGPASSWORD or ~/.pgpass."
        ))
    var databaseURLFlag: String?
    /// `--database-url`, else `JETSTREAM_DATABASE_URL`, else the config file's `database-url`.
    var databaseURL: String? { databaseURLFlag ?? EnvironmentDefault.string("JETSTREAM_DATABASE_URL") }
    @Option(help: "Writer connections per node to the database. [JETSTREAM_DATABASE_WRITERS]")
    var databaseWriters = EnvironmentDefault.value("JETSTREAM_DATABASE_WRITERS", 1)
    @Option(
        help:
            "Seconds between comparisons of every scope's version with the database (a safety net for a lost notification). [JETSTREAM_DATABASE_POLL_INTERVAL]"
    )
    var databasePollInterval = EnvironmentDefault.value("JETSTREAM_DATABASE_POLL_INTERVAL", 2.0)
    @Option(
        help:
            "Seconds a write may wait for the database before it is answered 503, and without an answer from it before the node is not ready (more than the poll interval). [JETSTREAM_DATABASE_TIMEOUT]"
    )
    var databaseTimeout = EnvironmentDefault.value("JETSTREAM_DATABASE_TIMEOUT", 5.0)
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
    @Option(help: "Presence members one scope holds at most (429 beyond). [JETSTREAM_MAX_PRESENCE_MEMBERS]")
    var maxPresenceMembers = EnvironmentDefault.value("JETSTREAM_MAX_PRESENCE_MEMBERS", 1000)
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
    @Option(
        help:
            "Bytes per second a request body must average after --header-timeout of grace; 0: no minimum. [JETSTREAM_MIN_BODY_RATE]"
    )
    var minBodyRate = EnvironmentDefault.value("JETSTREAM_MIN_BODY_RATE", 1024)
    @Option(
        help:
            "Open connections at most; one beyond is closed as it is accepted. Default: --max-streams + 1024; 0: only the open-file limit. [JETSTREAM_MAX_CONNECTIONS]"
    )
    var maxConnections = EnvironmentDefault.value("JETSTREAM_MAX_CONNECTIONS", -1)
    @Option(
        help:
            "Request body bytes all connections may hold at once while bodies arrive; beyond, 503. 0: no bound. [JETSTREAM_MAX_BUFFERED_BODY_BYTES]"
    )
    var maxBufferedBodyBytes = EnvironmentDefault.value("JETSTREAM_MAX_BUFFERED_BODY_BYTES", 256 << 20)
    @Option(
        help:
            "Bytes of per-request responses (not shared state bodies) all connections may hold unsent; beyond, 503. 0: no bound. [JETSTREAM_MAX_UNSENT_BYTES]"
    )
    var maxUnsentBytes = EnvironmentDefault.value("JETSTREAM_MAX_UNSENT_BYTES", 256 << 20)
    /// `--max-connections`, or --max-streams + 1024 when not given (room for every stream and
    /// for ordinary requests beside them).
    var effectiveMaxConnections: Int { maxConnections < 0 ? accessOptions.maxStreams + 1024 : maxConnections }
    @Option(help: "Unsent bytes per SSE stream before the subscriber is dropped. [JETSTREAM_MAX_PENDING_BYTES]")
    var maxPendingBytes = EnvironmentDefault.value("JETSTREAM_MAX_PENDING_BYTES", 1 << 20)
    @Option(help: "Seconds in-flight work may take on shutdown. [JETSTREAM_GRACE_PERIOD]")
    var gracePeriod = EnvironmentDefault.value("JETSTREAM_GRACE_PERIOD", 10.0)
    @Option(
        help:
            "Seconds between readiness turning false (streams closed) and the listener closing on SIGTERM. [JETSTREAM_DRAIN_DELAY]"
    )
    var drainDelay = EnvironmentDefault.value("JETSTREAM_DRAIN_DELAY", 0.0)
    @Option(
        name: .customLong("method"),
        help: "A server method served over HTTP, NAME=URL (docs/methods.md); repeatable. [JETSTREAM_METHODS]")
    var methods: [String] = EnvironmentDefault.list("JETSTREAM_METHODS")
    @Option(help: "Seconds a method's service may take to answer (then 504). [JETSTREAM_METHOD_TIMEOUT]")
    var methodTimeout = EnvironmentDefault.value("JETSTREAM_METHOD_TIMEOUT", 5.0)
    @Option(help: "Seconds an Idempotency-Key and its outcome are kept. [JETSTREAM_IDEMPOTENCY_TTL]")
    var idempotencyTTL = EnvironmentDefault.value("JETSTREAM_IDEMPOTENCY_TTL", 604_800.0)
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
        guard maxPresenceMembers >= 1 else { throw ValidationError("--max-presence-members must be at least 1") }
        guard resumeBuffer >= 0 else { throw ValidationError("--resume-buffer must be ≥ 0") }
        guard loops >= 1 else { throw ValidationError("--loops must be at least 1") }
        guard heartbeatInterval > 0 else { throw ValidationError("--heartbeat-interval must be positive") }
        guard drainDelay >= 0 else { throw ValidationError("--drain-delay must be ≥ 0") }
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must be ≥ 0") }
        guard idempotencyTTL > 0 else { throw ValidationError("--idempotency-ttl must be positive") }
        guard minBodyRate >= 0 else { throw ValidationError("--min-body-rate must be ≥ 0") }
        guard maxBufferedBodyBytes >= 0 else { throw ValidationError("--max-buffered-body-bytes must be ≥ 0") }
        guard maxUnsentBytes >= 0 else { throw ValidationError("--max-unsent-bytes must be ≥ 0") }
        guard maxConnections >= -1 else { throw ValidationError("--max-connections must be ≥ 0") }
        guard (1...64).contains(databaseWriters) else { throw ValidationError("--database-writers must be 1…64") }
        guard databasePollInterval > 0 else { throw ValidationError("--database-poll-interval must be positive") }
        guard databaseTimeout > databasePollInterval else {
            throw ValidationError(
                "--database-timeout (\(databaseTimeout) s) must be more than --database-poll-interval (\(databasePollInterval) s): the poll is what proves the link alive"
            )
        }
        guard methodTimeout > 0, methodTimeout <= 3600 else {
            throw ValidationError("--method-timeout must be more than 0 and at most 3600 seconds")
        }
        _ = try methodHooks()
        try validateConfigFile()
    }

    /// The `--method NAME=URL` services.
    func methodHooks() throws -> [HTTPMethodHook] {
        let timeout = Duration.milliseconds(Int64((methodTimeout * 1000).rounded()))
        var hooks: [HTTPMethodHook] = []
        for argument in methods {
            do {
                hooks.append(try HTTPMethodHook(argument: argument, timeout: timeout))
            } catch {
                throw ValidationError(error.description)
            }
        }
        return hooks
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

        var configuration = GatewayServerConfiguration(dataDirectory: dataDir)
        configuration.databaseURL = databaseURL
        configuration.databaseWriters = databaseWriters
        configuration.databasePollInterval = .milliseconds(Int64((databasePollInterval * 1000).rounded()))
        configuration.databaseTimeout = .milliseconds(Int64((databaseTimeout * 1000).rounded()))
        configuration.host = host
        configuration.port = port
        configuration.loops = loops
        configuration.schema = schema == nil ? nil : try loadSchema(logger: logger)
        configuration.limits = limits
        configuration.historyLimit = historyLimit
        configuration.resumeBufferSize = resumeBuffer
        configuration.snapshotInterval = snapshotInterval
        configuration.maxPresenceMembers = maxPresenceMembers
        configuration.idempotencyTTL = .milliseconds(Int64((idempotencyTTL * 1000).rounded()))
        configuration.heartbeatInterval = .seconds(heartbeatInterval)
        configuration.gracePeriod = .seconds(gracePeriod)
        configuration.drainDelay = .seconds(drainDelay)
        configuration.accessLog = accessLog
        configuration.methodHooks = try methodHooks()
        do {
            configuration.access = try accessOptions.policy()
        } catch {
            logger.critical("cannot configure auth", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        }
        let server: GatewayServer
        do {
            server = try await GatewayServer.start(configuration, logger: logger)
        } catch let error as AccessPolicyError {
            logger.critical("cannot configure auth", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        } catch let report as SchemaFitReport {
            // Every stored object the schema refuses, one per line: the operator fixes them all at
            // once (or declares `onInvalid`), not one per restart.
            logger.critical(
                "the stored data does not fit the schema",
                metadata: ["problems": "\(report.problems.count)", "unreadable": "\(report.failures.count)"])
            let lines = report.lines(schemaName: schema ?? "the demo schema").map { "  " + $0 }
            let text = (["the stored data does not fit the schema:"] + lines).joined(separator: "\n")
            FileHandle.standardError.write(Data((text + "\n").utf8))
            throw ExitCode(1)
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let boundPort = server.port
        let schemaName = schema ?? "built-in demo"
        // Announced from inside the group, once SIGTERM is trapped: a supervisor that signals
        // right after the line gets a graceful shutdown, never the default kill.
        try await server.run {
            print("jetstream listening on http://\(shownHost):\(boundPort)")
            fflush(nil)
            logger.info(
                "serving", metadata: ["address": "http://\(shownHost):\(boundPort)", "schema": "\(schemaName)"])
        }
    }

    /// Every limit from its flag (``ServerLimits`` hands each to the layer that checks it).
    var limits: ServerLimits {
        var limits = ServerLimits()
        limits.maxBodyBytes = maxBodyBytes
        limits.maxHeaderBytes = maxHeaderBytes
        limits.maxFragmentsPerSet = maxFragments
        limits.maxObjectsPerScope = maxObjects
        limits.maxPendingBytes = maxPendingBytes
        limits.headerTimeout = .seconds(headerTimeout)
        limits.idleTimeout = .seconds(idleTimeout)
        limits.minBodyRate = minBodyRate
        limits.maxConnections = effectiveMaxConnections
        limits.maxBufferedBodyBytes = maxBufferedBodyBytes
        limits.maxUnsentBytes = maxUnsentBytes
        limits.maxStreams = accessOptions.maxStreams
        limits.maxStreamsPerClient = accessOptions.maxStreamsPerClient
        limits.maxScopesPerStream = accessOptions.maxScopesPerStream
        return limits
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
}

/// One JSON object per line on standard error (`--log-format json`), for log shippers:
/// `{"time":…,"level":"info","label":"jetstream","message":"…", metadata…}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object = JSONObject()
        object["time"] = .string(
            Date().ISO8601Format(.iso8601.time(includingFractionalSeconds: true).year().month().day()))
        object["level"] = .string(event.level.rawValue)
        object["label"] = .string(label)
        object["message"] = .string(event.message.description)
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() { object[key] = .string(merged[key]!.description) }
        var line = JSONValue.object(object).encoded()
        line.append(10)
        FileHandle.standardError.write(Data(line))
    }
}
