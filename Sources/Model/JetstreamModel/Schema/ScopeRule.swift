/// Which scopes exist and with which root class: a glob on the scope name (`*` any run of
/// characters, `?` one character) and the root class's name.
///
/// ```swift
/// ScopeRule(pattern: "canvas-*", rootClassName: "Canvas").matches("canvas-7")   // true
/// ```
public struct ScopeRule: Sendable, Hashable {
    public let pattern: String
    public let rootClassName: String

    public init(pattern: String, rootClassName: String) {
        self.pattern = pattern
        self.rootClassName = rootClassName
    }

    /// Whether the glob matches the whole scope name.
    public func matches(_ scopeName: String) -> Bool {
        ScopeRule.glob(Array(pattern.unicodeScalars)[...], Array(scopeName.unicodeScalars)[...])
    }

    /// Iterative glob with single-star backtracking: linear in practice, no recursion.
    private static func glob(_ pattern: ArraySlice<Unicode.Scalar>, _ text: ArraySlice<Unicode.Scalar>) -> Bool {
        var p = pattern.startIndex
        var t = text.startIndex
        var starP: Int?
        var starT = 0
        while t < text.endIndex {
            if p < pattern.endIndex, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.endIndex, pattern[p] == "*" {
                starP = p
                starT = t
                p += 1
            } else if let star = starP {
                p = star + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.endIndex, pattern[p] == "*" { p += 1 }
        return p == pattern.endIndex
    }
}
