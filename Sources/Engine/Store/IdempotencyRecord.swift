/// The first outcome of a request that carried an `Idempotency-Key`: a retry with the same key and the same
/// request digest gets `status` and `response` again, whether the outcome was an accept (with a `version`)
/// or a reject (without one).
///
/// ```swift
/// let outcome = IdempotencyRecord(key: key, requestDigest: sha256(body), status: 422, response: problemJSON)
/// try await store.recordRejection(scope: "canvas-1", outcome)
/// ```
public struct IdempotencyRecord: Sendable, Hashable {
    public var key: String
    /// A digest of the request (method, path, body) to tell a true retry from a reused key.
    public var requestDigest: [UInt8]
    /// The HTTP status answered the first time.
    public var status: Int
    /// The response body answered the first time.
    public var response: [UInt8]
    /// The version the change set got, `nil` for a rejected one. Set by the store on append.
    public var version: Int64?
    /// When the record was stored, in milliseconds since 1970 (set by the store from its clock).
    public var createdAtMilliseconds: Int64

    public init(
        key: String, requestDigest: [UInt8], status: Int, response: [UInt8], version: Int64? = nil,
        createdAtMilliseconds: Int64 = 0
    ) {
        self.key = key
        self.requestDigest = requestDigest
        self.status = status
        self.response = response
        self.version = version
        self.createdAtMilliseconds = createdAtMilliseconds
    }
}
