import JetstreamModel

/// What the gateway needs beyond the HTTP engine's own settings.
///
/// ```swift
/// var configuration = GatewayConfiguration(schema: .demo)
/// configuration.historyLimit = 500
/// ```
public struct GatewayConfiguration: Sendable {
    /// The model schema change sets are validated against.
    public var schema: Schema
    /// Model limits: objects per scope, fragments per set, string and collection lengths.
    public var limits: Limits
    /// Change sets retained per scope for history and resume (`--history-limit`).
    public var historyLimit: Int
    /// Encoded change-set events kept in memory per scope, so recent resumes never touch the store.
    public var resumeBufferSize: Int
    /// A snapshot of a scope is written every this many change sets, bounding recovery time.
    public var snapshotInterval: Int
    /// The `retry:` reconnection delay sent at the start of every event stream, in milliseconds.
    public var retryMilliseconds: Int
    /// Most change sets one history request returns.
    public var maxHistoryPage: Int

    public init(
        schema: Schema, limits: Limits = Limits(), historyLimit: Int = 10_000, resumeBufferSize: Int = 256,
        snapshotInterval: Int = 1000, retryMilliseconds: Int = 2000, maxHistoryPage: Int = 10_000
    ) {
        self.schema = schema
        self.limits = limits
        self.historyLimit = historyLimit
        self.resumeBufferSize = resumeBufferSize
        self.snapshotInterval = snapshotInterval
        self.retryMilliseconds = retryMilliseconds
        self.maxHistoryPage = maxHistoryPage
    }
}
