import JetstreamModel

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
