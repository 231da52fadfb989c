import ScopeEngine

/// Scope versions as HTTP entity tags: `"42"`. Parses `If-Match` / `If-None-Match` lists (also
/// for the static assets' hash tags, ``noneMatchIncludes(_:_:)``).
enum EntityTag {
    static func header(for version: Int) -> String { "\"\(version)\"" }

    /// The condition of an `If-Match` or `If-None-Match` header.
    typealias Condition = VersionCondition

    /// Parses a comma-separated list of entity tags (`*`, `"42"`, `W/"42"`); `weak` tags count
    /// only when `allowWeak` (weak comparison, for `If-None-Match`). Returns nil when malformed.
    static func parse(_ value: String, allowWeak: Bool) -> Condition? {
        guard let list = TagList(value, allowWeak: allowWeak) else { return nil }
        guard case .tags(let tags) = list else { return .any }
        let versions = Set(tags.compactMap { Int($0) }.filter { $0 >= 0 })
        return versions.isEmpty ? Condition.none : .versions(versions)
    }

    /// Whether an `If-None-Match` value names `opaqueTag` (the tag without quotes) or is `*`, by
    /// weak comparison (RFC 9110 §13.1.2); false when the value is malformed.
    ///
    /// ```swift
    /// EntityTag.noneMatchIncludes(#"W/"ab12", "cd34""#, "cd34")   // true
    /// ```
    static func noneMatchIncludes(_ value: String, _ opaqueTag: String) -> Bool {
        switch TagList(value, allowWeak: true) {
        case nil: false
        case .any: true
        case .tags(let tags): tags.contains(opaqueTag)
        }
    }

    /// A list of entity tags: `*`, or the opaque parts of the tags in order (weak ones only when
    /// `allowWeak`); nil when malformed.
    private enum TagList {
        case any
        case tags([String])

        init?(_ value: String, allowWeak: Bool) {
            let trimmed = value.trimmingSpaces
            if trimmed == "*" {
                self = .any
                return
            }
            var tags: [String] = []
            // RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, where etagc includes ",";
            // so the list is split on commas outside quotes only.
            var bytes = Substring(trimmed).utf8[...]
            while true {
                while let first = bytes.first,
                    first == UInt8(ascii: " ") || first == UInt8(ascii: "\t")
                        || first == UInt8(ascii: ",")
                {
                    bytes = bytes.dropFirst()
                }
                guard !bytes.isEmpty else { break }
                var weak = false
                if bytes.starts(with: "W/".utf8) {
                    weak = true
                    bytes = bytes.dropFirst(2)
                }
                guard bytes.first == UInt8(ascii: "\""),
                    let close = bytes.dropFirst().firstIndex(of: UInt8(ascii: "\""))
                else { return nil }
                let opaque = bytes[bytes.index(after: bytes.startIndex)..<close]
                bytes = bytes[bytes.index(after: close)...]
                while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                    bytes = bytes.dropFirst()
                }
                guard bytes.isEmpty || bytes.first == UInt8(ascii: ",") else { return nil }
                if weak && !allowWeak { continue }
                tags.append(String(decoding: opaque, as: UTF8.self))
            }
            self = .tags(tags)
        }
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
