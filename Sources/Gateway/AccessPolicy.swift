/// Who may do what and how much: auth, trusted proxies, rate and stream limits, stream rotation,
/// CORS. The default is open (no auth, no rate limit) with the stream limits of the README.
///
/// ```swift
/// var policy = AccessPolicy()
/// policy.auth.hmacSecrets = [secret]
/// policy.rateLimit = 50
/// let access = try await AccessControl.make(policy: policy)
/// ```
public struct AccessPolicy: Sendable {
    public var auth = AuthConfiguration()
    public var trustedProxies = TrustedProxies.none
    /// Requests per second per client (token subject, else client address); 0 turns it off.
    public var rateLimit: Double = 0
    /// Requests a client may make at once before the rate applies; default twice the rate.
    public var rateBurst: Double?
    /// Open event streams per client and in all (``GatewayServer/ServerLimits`` sets both).
    public var maxStreamsPerClient = 100
    public var maxStreams = 10_000
    /// Event streams are ended with `event: closing` after this long (clients resume); nil: never.
    public var streamMaxAge: Duration?
    public var cors = CORSPolicy()

    public init() {}
}
