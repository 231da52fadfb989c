import Foundation
import HTTPServer
import HTTPTypes
import Synchronization

/// The running form of an ``AccessPolicy``: the token verifier, the rate limiter, the stream
/// counters and the sweeper that ends streams at token expiry or rotation.
///
/// ```swift
/// let access = try await AccessControl.make(policy: policy)
/// let gateway = Gateway(hub: hub, access: access)
/// ```
public final class AccessControl: Sendable {
    public let policy: AccessPolicy
    let verifier: TokenVerifier?
    let rateLimiter: RateLimiter?
    let streams: Mutex<StreamCounter>
    let deadlines = StreamDeadlines()

    init(policy: AccessPolicy, verifier: TokenVerifier?) {
        self.policy = policy
        self.verifier = verifier
        rateLimiter =
            policy.rateLimit > 0
            ? RateLimiter(rate: policy.rateLimit, burst: policy.rateBurst ?? max(1, policy.rateLimit * 2)) : nil
        streams = Mutex(StreamCounter(maxTotal: policy.maxStreams, maxPerClient: policy.maxStreamsPerClient))
    }

    /// Loads the policy's keys; throws a message naming a key that cannot be used.
    public static func make(policy: AccessPolicy) async throws -> AccessControl {
        let verifier = policy.auth.isEnabled ? try await TokenVerifier(configuration: policy.auth) : nil
        return AccessControl(policy: policy, verifier: verifier)
    }

    /// Everything open, no rate limit: what a gateway without configuration does.
    public static func open() -> AccessControl {
        AccessControl(policy: AccessPolicy(), verifier: nil)
    }

    /// A sentence for the start-up log saying what is open to anonymous clients.
    public var summary: String {
        guard policy.auth.isEnabled else { return "auth disabled: anonymous read and write on every scope" }
        let read = policy.auth.anonymousRead.patterns
        let write = policy.auth.anonymousWrite.patterns
        return "auth enabled (JWT); anonymous read: \(read.isEmpty ? "none" : read.joined(separator: ", "))"
            + "; anonymous write: \(write.isEmpty ? "none" : write.joined(separator: ", "))"
    }

    /// The client a request comes from, after trusted-proxy resolution.
    func client(of request: HTTPServerRequest, peer: String) -> String {
        ClientAddress.resolve(
            peer: peer, forwardedFor: request.headerFields.value(of: ServerHeaders.xForwardedFor),
            forwarded: request.headerFields.value(of: ServerHeaders.forwarded), trusted: policy.trustedProxies)
    }
}

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
    /// Distinct scopes one many-scope stream (`GET /v1/events`) may carry.
    public var maxScopesPerStream = 256
    /// Event streams are ended with `event: closing` after this long (clients resume); nil: never.
    public var streamMaxAge: Duration?
    public var cors = CORSPolicy()

    public init() {}
}
