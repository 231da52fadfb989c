import ScopeEngine

/// Scope versions as HTTP entity tags: `"42"`. Parses `If-Match` / `If-None-Match` lists.
enum EntityTag {
    static func header(for version: Int) -> String { "\"\(version)\"" }

    /// The condition of an `If-Match` or `If-None-Match` header.
    typealias Condition = VersionCondition

    /// Parses a comma-separated list of entity tags (`*`, `"42"`, `W/"42"`); `weak` tags count
    /// only when `allowWeak` (weak comparison, for `If-None-Match`). Returns nil when malformed.
    static func parse(_ value: String, allowWeak: Bool) -> Condition? {
        let trimmed = value.trimmingSpaces
        if trimmed == "*" { return .any }
        var versions = Set<Int>()
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
            if let version = Int(String(decoding: opaque, as: UTF8.self)), version >= 0 { versions.insert(version) }
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
