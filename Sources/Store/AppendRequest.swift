/// One change set to make durable: the scope, its new version (the current one + 1), the payload and,
/// when the request carried an `Idempotency-Key`, the outcome to replay — all in one commit.
///
/// ```swift
/// try await store.append(AppendRequest(scope: "canvas-1", version: 42, payload: Array(json.utf8)))
/// ```
public struct AppendRequest: Sendable, Hashable {
    public var scope: String
    public var version: Int64
    public var payload: [UInt8]
    /// Stored with the change set; its ``IdempotencyRecord/version`` is set to ``version``.
    public var idempotency: IdempotencyRecord?

    public init(scope: String, version: Int64, payload: [UInt8], idempotency: IdempotencyRecord? = nil) {
        self.scope = scope
        self.version = version
        self.payload = payload
        self.idempotency = idempotency
    }
}
