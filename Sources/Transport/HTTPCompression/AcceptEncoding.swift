/// A parsed `Accept-Encoding` header (RFC 9110 §12.5.3) and the choice of a response coding.
///
/// Codings are matched case-insensitively, `x-gzip` counts as `gzip`, `q=0` means "not
/// acceptable", and `*` covers every coding not listed by name. Malformed members (a bad
/// q-value, an empty name) are ignored rather than failing the request: the worst outcome of
/// ignoring one is an uncompressed response, which every client accepts.
///
/// ```swift
/// let accept = AcceptEncoding(header: "gzip;q=0.5, deflate, *;q=0")
/// accept.preferredCoding()  // .deflate (higher q than gzip)
/// AcceptEncoding(header: nil).preferredCoding()  // nil: send identity
/// ```
public struct AcceptEncoding: Sendable, Equatable {
    /// One member of the header: a lowercased coding name (or `*`) and its weight 0…1.
    public struct Member: Sendable, Equatable {
        public var coding: String
        public var quality: Double

        public init(coding: String, quality: Double) {
            self.coding = coding
            self.quality = quality
        }
    }

    /// The members in header order.
    public var members: [Member]

    /// Parses the header's value; `nil` (no header) yields no members.
    ///
    /// A missing header formally allows any coding, but clients that can decode always say so,
    /// and sending gzip to one that did not ask is the classic way to break a client; so a missing
    /// header selects identity, like nginx and Apache do.
    public init(header: String?) {
        members = header.map(Self.parse) ?? []
    }

    /// The weight the client gives `coding`: its own entry, else `*`, else 0.
    public func quality(of coding: ContentCoding) -> Double {
        if let named = members.last(where: { $0.coding == coding.rawValue }) { return named.quality }
        if let wildcard = members.last(where: { $0.coding == "*" }) { return wildcard.quality }
        return 0
    }

    /// The acceptable coding with the highest weight among `supported`; ties go to the earlier
    /// entry of `supported` (the server's preference). `nil` means send identity.
    public func preferredCoding(among supported: [ContentCoding] = [.gzip, .deflate]) -> ContentCoding? {
        var best: (coding: ContentCoding, quality: Double)?
        for coding in supported {
            let quality = quality(of: coding)
            guard quality > 0 else { continue }
            if best == nil || quality > best!.quality { best = (coding, quality) }
        }
        return best?.coding
    }

    private static func parse(_ header: String) -> [Member] {
        header.split(separator: ",").compactMap { item in
            let parts = item.split(separator: ";", omittingEmptySubsequences: false)
            var name = parts[0].trimmingSpaces().lowercased()
            guard !name.isEmpty else { return nil }
            if name == "x-gzip" { name = "gzip" }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingSpaces().lowercased() == "q" else { continue }
                guard let value = parseQuality(pair[1].trimmingSpaces()) else { return nil }
                quality = value
            }
            return Member(coding: name, quality: quality)
        }
    }

    /// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, read leniently as 0…1.
    private static func parseQuality(_ text: Substring) -> Double? {
        guard let value = Double(text), value.isFinite, (0...1).contains(value), text.count <= 5 else { return nil }
        return value
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
