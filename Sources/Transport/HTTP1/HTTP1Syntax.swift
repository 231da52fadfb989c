/// Character classes of RFC 9110 §5.6 as byte tests.
enum HTTP1Syntax {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9
    static let colon: UInt8 = 58

    /// `tchar`: the characters of a token (method, header name).
    static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// A byte allowed in a request target (RFC 3986): visible ASCII other than `#` — a fragment is
    /// never sent, and non-ASCII must be percent-encoded.
    static func isTargetChar(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "#")
    }

    /// Whether `target` has one of RFC 9112 §3.2's forms: origin-form (`/path`), absolute-form
    /// (`scheme://…`), authority-form (`host:port`, CONNECT only) or asterisk-form (`*`).
    static func isValidTargetForm<Bytes: Collection<UInt8>>(_ target: Bytes, method: String) -> Bool {
        guard let first = target.first else { return false }
        if first == UInt8(ascii: "/") { return true }
        if first == UInt8(ascii: "*") { return target.count == 1 }
        if method == "CONNECT" { return target.contains(UInt8(ascii: ":")) }
        // absolute-form: scheme ":" "//" …, the scheme a letter followed by letters, digits, + - .
        guard let colon = target.firstIndex(of: UInt8(ascii: ":")), colon > target.startIndex else { return false }
        let scheme = target[target.startIndex..<colon]
        let isLetter = { (byte: UInt8) in (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
        guard isLetter(scheme.first!),
            scheme.allSatisfy({ isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { return false }
        return target[colon...].starts(with: Array("://".utf8))
    }

    /// A byte allowed inside a field value: VCHAR, SP, HTAB or obs-text.
    static func isFieldValueChar(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    static func equalsIgnoringCase(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { lowercased($0) == lowercased($1) }
    }

    /// The comma-separated list elements of a field value, trimmed and lowercased, empty ones dropped.
    static func listElements(_ value: String) -> [String] {
        // The usual single token ("keep-alive", "close", "chunked") skips the split and the trims:
        // every keep-alive request carries one, and splitting it was a third of a GET's parse.
        if !value.utf8.contains(where: { $0 == UInt8(ascii: ",") || isWhitespace($0) }) {
            return value.isEmpty ? [] : [value.lowercased()]
        }
        return value.split(separator: ",").map {
            String(
                decoding: $0.utf8.drop(while: isWhitespace).reversed().drop(while: isWhitespace).reversed(),
                as: UTF8.self
            ).lowercased()
        }.filter { !$0.isEmpty }
    }
}
