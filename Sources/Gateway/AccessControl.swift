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
            peer: peer, forwardedFor: request.headerFields[ServerHeaders.xForwardedFor],
            forwarded: request.headerFields[ServerHeaders.forwarded], trusted: policy.trustedProxies)
    }
}
