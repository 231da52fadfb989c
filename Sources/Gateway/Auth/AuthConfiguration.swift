/// How the gateway authenticates and authorizes requests. With no key configured, auth is off:
/// every client may read and write every scope. With keys, only what the anonymous patterns name
/// is open without a token.
///
/// ```swift
/// var auth = AuthConfiguration()
/// auth.hmacSecrets = [Array("a shared secret of 32 bytes or more".utf8)]
/// auth.anonymousRead = ScopePatterns(["public-*"])
/// ```
public struct AuthConfiguration: Sendable {
    /// HS256 shared secrets (`--jwt-secret-file`).
    public var hmacSecrets: [[UInt8]] = []
    /// PEM public keys (`--jwt-public-key`): ES256 for a P-256 key, RS256 for an RSA key.
    public var publicKeysPEM: [String] = []
    /// JWKS documents (`--jwks-file`).
    public var jwksJSON: [String] = []
    /// The `iss` a token must carry, when set.
    public var issuer: String?
    /// A value the token's `aud` must contain, when set.
    public var audience: String?
    /// Scopes anyone may read, token or not (`--anonymous-read`).
    public var anonymousRead: ScopePatterns = .none
    /// Scopes anyone may write (`--anonymous-write`).
    public var anonymousWrite: ScopePatterns = .none

    public init() {}

    /// Whether any key is configured; without one, auth is disabled.
    public var isEnabled: Bool { !hmacSecrets.isEmpty || !publicKeysPEM.isEmpty || !jwksJSON.isEmpty }

    /// What a request without a token may do.
    public var anonymousGrant: AccessGrant {
        isEnabled
            ? AccessGrant(subject: nil, read: anonymousRead, write: anonymousWrite, expiresAt: nil)
            : AccessGrant(subject: nil, read: .all, write: .all, expiresAt: nil)
    }
}
