import HTTPServer
import JetstreamModel

/// Every limit of a gateway in one value: the HTTP parser and server, the access layer, the
/// engine and the model each take theirs from here, so a limit is checked in one place with one
/// answer (the fragment count, for instance, only by the engine: `413 too-many-fragments`).
///
/// ```swift
/// var limits = ServerLimits()
/// limits.maxBodyBytes = 4 << 20
/// limits.maxFragmentsPerSet = 5000
/// ```
public struct ServerLimits: Sendable, Hashable {
    /// Largest request body in bytes (`413 payload-too-large`).
    public var maxBodyBytes = 1 << 20
    /// Largest request head in bytes (`431 headers-too-large`).
    public var maxHeaderBytes = 16 << 10
    /// Most fragments in one change set (`413 too-many-fragments`, before anything is applied).
    public var maxFragmentsPerSet = 1000
    /// Most objects in one scope, the root included (a rejected fragment, `422`).
    public var maxObjectsPerScope = 100_000
    /// Most UTF-8 bytes in one string value.
    public var maxStringLength = 65_536
    /// Most elements in one collection value.
    public var maxCollectionLength = 100_000
    /// Open event streams in all (`429 too-many-streams`).
    public var maxStreams = 10_000
    /// Open event streams per client.
    public var maxStreamsPerClient = 100
    /// Distinct scopes one `GET /v1/events` stream may carry (`--max-scopes-per-stream`).
    public var maxScopesPerStream = 256
    /// Unsent bytes per event stream before the subscriber is dropped (`event: error`, slow-consumer).
    public var maxPendingBytes = 1 << 20
    /// Most change sets one history request returns.
    public var maxHistoryPage = 10_000
    /// Time a client has to send a request head (`408`).
    public var headerTimeout: Duration = .seconds(10)
    /// Time an idle keep-alive connection stays open.
    public var idleTimeout: Duration = .seconds(60)
    /// Bytes per second a request body must average after a grace of ``headerTimeout``; 0: none.
    public var minBodyRate = 1024
    /// Open connections at most (0: only the descriptor limit).
    public var maxConnections = 0
    /// Request body bytes all connections may hold at once while bodies arrive (0: no bound).
    public var maxBufferedBodyBytes = 256 << 20
    /// Bytes of per-request responses all connections may hold unsent (0: no bound).
    public var maxUnsentBytes = 256 << 20

    public init() {}

    /// The model's share: what applying a change set checks.
    public var model: Limits {
        Limits(
            maxObjectsPerScope: maxObjectsPerScope, maxFragmentsPerSet: maxFragmentsPerSet,
            maxStringLength: maxStringLength, maxCollectionLength: maxCollectionLength)
    }

    /// The HTTP server's share: parser bounds, timeouts and the unsent-bytes bound.
    public func apply(to configuration: inout HTTPServerConfiguration) {
        configuration.maxBodyBytes = maxBodyBytes
        configuration.maxHeaderBytes = maxHeaderBytes
        // The request target may take half of a larger head: a many-scope stream names each of
        // its scopes in the query (256 names of 128 characters are 35 KB).
        configuration.maxTargetBytes = max(configuration.maxTargetBytes, maxHeaderBytes / 2)
        configuration.headerReadTimeout = headerTimeout
        configuration.idleTimeout = idleTimeout
        configuration.minBodyBytesPerSecond = minBodyRate
        configuration.maxConnections = maxConnections
        configuration.maxBufferedBodyBytes = maxBufferedBodyBytes
        configuration.maxUnsentBytes = maxUnsentBytes
        configuration.maxPendingBytes = maxPendingBytes
    }
}
