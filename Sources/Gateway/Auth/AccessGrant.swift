import Foundation

/// What one request may do: the scopes it may read and write, who it is (the token's `sub`) and
/// until when (the token's `exp`). Write implies nothing about read: a token that may write
/// `canvas-*` reads them only if its `read` list matches too.
///
/// ```swift
/// let grant = AccessGrant(subject: "ada", read: ScopePatterns(["canvas-*"]), write: .none, expiresAt: nil)
/// grant.allows(.read, scope: "canvas-1")   // true
/// ```
public struct AccessGrant: Sendable, Hashable {
    public enum Permission: String, Sendable {
        case read, write
    }

    /// The token's subject; nil for an anonymous request.
    public var subject: String?
    public var read: ScopePatterns
    public var write: ScopePatterns
    /// The token's expiry; nil for anonymous requests and tokens without `exp`.
    public var expiresAt: Date?

    public init(subject: String?, read: ScopePatterns, write: ScopePatterns, expiresAt: Date?) {
        self.subject = subject
        self.read = read
        self.write = write
        self.expiresAt = expiresAt
    }

    /// Whether the request was authenticated by a token.
    public var isAuthenticated: Bool { subject != nil }

    public func allows(_ permission: Permission, scope: String) -> Bool {
        switch permission {
        case .read: read.matches(scope)
        case .write: write.matches(scope)
        }
    }

    /// The token's grants joined with what anonymous clients may do anyway.
    func adding(anonymous: AccessGrant) -> AccessGrant {
        var joined = self
        joined.read = ScopePatterns(read.patterns + anonymous.read.patterns)
        joined.write = ScopePatterns(write.patterns + anonymous.write.patterns)
        return joined
    }
}
