import Foundation
import JetstreamModel
import ScopeEngine

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
    /// The token's `roles` claim, which the schema's `role:<name>` rules read.
    public var roles: Set<String>
    /// Every claim of the token as it was signed (what methods get as `claims`); nil when anonymous.
    public var claims: JSONValue?

    public init(
        subject: String?, read: ScopePatterns, write: ScopePatterns, expiresAt: Date?, roles: Set<String> = [],
        claims: JSONValue? = nil
    ) {
        self.subject = subject
        self.read = read
        self.write = write
        self.expiresAt = expiresAt
        self.roles = roles
        self.claims = claims
    }

    /// Who writes, as a change set records it and the schema's rules judge it.
    public var changeOrigin: ChangeOrigin { ChangeOrigin(subject: subject, roles: roles) }

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

/// A list of globs on scope names (`*` any run of characters, `?` one character), the same syntax
/// as the schema's scope rules.
///
/// ```swift
/// ScopePatterns(["canvas-*", "demo"]).matches("canvas-7")   // true
/// ```
public struct ScopePatterns: Sendable, Hashable {
    public let patterns: [String]
    private let rules: [ScopeRule]
    private let matchesEverything: Bool

    public init(_ patterns: [String]) {
        self.patterns = patterns
        rules = patterns.map { ScopeRule(pattern: $0, rootClassName: "") }
        matchesEverything = patterns.contains("*")
    }

    /// No scope at all.
    public static let none = ScopePatterns([])
    /// Every scope.
    public static let all = ScopePatterns(["*"])

    public var isEmpty: Bool { patterns.isEmpty }

    /// Whether some pattern matches the whole of `scopeName`.
    public func matches(_ scopeName: String) -> Bool {
        matchesEverything || rules.contains { $0.matches(scopeName) }
    }
}
