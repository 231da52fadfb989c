import Foundation
import Gateway
import JetstreamModel
import ScopeEngine
import SocketLoop

/// Everything a running gateway is made from: where it listens, which schema and store, its
/// limits and its access policy. `jetstream serve` fills one from flags, environment and config
/// file; tests fill one in code.
///
/// ```swift
/// var configuration = GatewayServerConfiguration(dataDirectory: tempDirectory)
/// configuration.port = 0                       // an ephemeral port (see GatewayServer.port)
/// configuration.limits.maxFragmentsPerSet = 10
/// ```
public struct GatewayServerConfiguration: Sendable {
    /// Server methods (`POST /v1/scopes/{name}/methods/{method}`, docs/methods.md), registered with
    /// ``method(_:_:)``. With the built-in demo schema its `arrange` is there too.
    public var methods: [ScopeMethod] = []
    /// Server methods served by services over HTTP (`--method NAME=URL`, docs/methods.md).
    public var methodHooks: [HTTPMethodHook] = []
    /// Address to listen on (`::` for all IPv6 and IPv4 addresses).
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one.
    public var port = 8080
    /// Event-loop threads.
    public var loops = SocketServerConfiguration.coreCount
    /// Directory of the embedded SQLite store (`jetstream.sqlite` inside it).
    public var dataDirectory: String
    /// A PostgreSQL connection string (`postgres://…` or `key=value …`): the nodes sharing it
    /// share every scope. Nil for the embedded store in ``dataDirectory``.
    public var databaseURL: String?
    /// Writer connections per node to the shared database.
    public var databaseWriters = 1
    /// How often a node on a shared database compares every scope's version (a safety net for a
    /// lost notification).
    public var databasePollInterval: Duration = .seconds(2)
    /// How long a write may wait for the shared database before it is answered 503, and how long
    /// the node may go without an answer from it before it is not ready.
    public var databaseTimeout: Duration = .seconds(5)
    /// How often a change set that lost a version race to another node is validated again and
    /// retried before it is answered 503 (races are rare when the proxy routes by scope; on one
    /// scope written through several nodes at once they are constant).
    public var conflictRetries = 20
    /// The model schema; the built-in demo schema when nil (and the `demo` scope is created).
    public var schema: Schema?
    public var limits = ServerLimits()
    public var access = AccessPolicy()
    /// Change sets retained per scope for history and resume.
    public var historyLimit = 10_000
    /// Recent change sets per scope kept encoded in memory for resumes.
    public var resumeBufferSize = 256
    /// A snapshot every this many change sets.
    public var snapshotInterval = 1000
    /// Presence members one scope holds at most.
    public var maxPresenceMembers = 1000
    /// How long an `Idempotency-Key` and its outcome are kept.
    public var idempotencyTTL: Duration = .seconds(604_800)
    /// Time between SSE keep-alive comments.
    public var heartbeatInterval: Duration = .seconds(15)
    /// The `retry:` delay every event stream starts with.
    public var retryMilliseconds = 2000
    /// Time in-flight work may take on shutdown.
    public var gracePeriod: Duration = .seconds(10)
    /// Time between readiness turning false (streams closed) and the listener closing on shutdown.
    public var drainDelay: Duration = .zero
    /// One log line per request (label `jetstream.access`).
    public var accessLog = true

    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The store's file inside ``dataDirectory``.
    public var storePath: String { (dataDirectory as NSString).appendingPathComponent("jetstream.sqlite") }

    /// Registers a server method: `handler` gets the scope's latest state, the call's `args` and
    /// the caller's subject, and returns the fragments to apply as one change set and a result,
    /// or throws ``MethodRejection`` (docs/methods.md).
    ///
    /// ```swift
    /// configuration.method("clear") { call in
    ///     MethodOutcome(fragments: [SyncFragment(type: .change, uuid: call.state.rootUUID, clsName: "Canvas",
    ///                                            properties: ["shapes": []])])
    /// }
    /// ```
    public mutating func method(_ name: String, _ handler: @escaping ScopeMethod.Handler) {
        methods.append(ScopeMethod(name, handler))
    }
}
