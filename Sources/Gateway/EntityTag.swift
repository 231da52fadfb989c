/// Scope versions as HTTP entity tags: `"42"`. Parses `If-Match` / `If-None-Match` lists.
enum EntityTag {
    static func header(for version: Int) -> String { "\"\(version)\"" }

    /// The condition of an `If-Match` or `If-None-Match` header.
    enum Condition: Equatable {
        case any
        case versions(Set<Int>)
        /// Syntactically valid tags none of which is a version of ours: matches nothing.
        case none
    }

    /// Parses a comma-separated list of entity tags (`*`, `"42"`, `W/"42"`); `weak` tags count
    /// only when `allowWeak` (weak comparison, for `If-None-Match`). Returns nil when malformed.
    static func parse(_ value: String, allowWeak: Bool) -> Condition? {
        let trimmed = value.trimmingSpaces
        if trimmed == "*" { return .any }
        var versions = Set<Int>()
        for rawTag in trimmed.split(separator: ",", omittingEmptySubsequences: true) {
            var tag = Substring(rawTag.description.trimmingSpaces)
            var weak = false
            if tag.hasPrefix("W/") {
                weak = true
                tag = tag.dropFirst(2)
            }
            guard tag.count >= 2, tag.first == "\"", tag.last == "\"" else { return nil }
            if weak && !allowWeak { continue }
            if let version = Int(tag.dropFirst().dropLast()), version >= 0 { versions.insert(version) }
        }
        return versions.isEmpty ? Condition.none : .versions(versions)
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
