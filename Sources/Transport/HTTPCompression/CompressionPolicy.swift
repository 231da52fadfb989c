/// Decides whether a response body is worth compressing and in which coding.
///
/// A body is compressed when the client accepts gzip or deflate, the body is not already
/// encoded, its media type is textual (compressing JPEG or zip data costs CPU and gains
/// nothing), and it is at least ``minimumSize`` bytes: below about 1 KiB the gzip framing
/// (18 bytes) and the CPU cost outweigh the saving, and the body fits one packet anyway.
/// Streams (`bodySize == nil`, e.g. SSE) skip the size rule: their total is what counts.
///
/// ```swift
/// let policy = CompressionPolicy()
/// policy.coding(acceptEncoding: "gzip, br", contentType: "application/json", bodySize: 4096)  // .gzip
/// policy.coding(acceptEncoding: "gzip", contentType: "image/png", bodySize: 4096)             // nil
/// ```
public struct CompressionPolicy: Sendable, Equatable {
    /// Bodies smaller than this many bytes are sent as they are.
    public var minimumSize: Int
    /// Codings the server offers, in order of preference.
    public var supportedCodings: [ContentCoding]

    public init(minimumSize: Int = 1024, supportedCodings: [ContentCoding] = [.gzip, .deflate]) {
        self.minimumSize = minimumSize
        self.supportedCodings = supportedCodings
    }

    /// The coding to apply, or `nil` to send the body as it is.
    ///
    /// - Parameters:
    ///   - acceptEncoding: the request's `Accept-Encoding` value (all of them joined by ", ").
    ///   - contentType: the response's `Content-Type`; missing means "unknown", not compressed.
    ///   - contentEncoding: the response's existing `Content-Encoding`, if any (never re-encode).
    ///   - bodySize: the body length, or `nil` for a stream of unknown length.
    public func coding(
        acceptEncoding: String?, contentType: String?, contentEncoding: String? = nil, bodySize: Int?
    ) -> ContentCoding? {
        // Cheapest test first: most API clients (curl, wrk, services) send no Accept-Encoding at
        // all, and this runs for every response.
        guard let acceptEncoding, !acceptEncoding.isEmpty else { return nil }
        if let bodySize, bodySize < minimumSize { return nil }
        if let contentEncoding, !contentEncoding.isEmpty, contentEncoding.lowercased() != "identity" { return nil }
        guard let contentType, Self.isCompressible(contentType: contentType) else { return nil }
        return AcceptEncoding(header: acceptEncoding).preferredCoding(among: supportedCodings)
    }

    /// Whether the response itself could be compressed for some client (textual, large enough,
    /// not already encoded), without looking at `Accept-Encoding`: it decides `Vary`.
    public func isEligible(contentType: String?, contentEncoding: String? = nil, bodySize: Int?) -> Bool {
        if let bodySize, bodySize < minimumSize { return false }
        if let contentEncoding, !contentEncoding.isEmpty, contentEncoding.lowercased() != "identity" { return false }
        guard let contentType else { return false }
        return Self.isCompressible(contentType: contentType)
    }

    /// Whether a media type is textual enough to compress well: `text/*`, JSON, XML, JavaScript,
    /// TypeScript, SVG, NDJSON, form data, and any `+json`/`+xml` structured syntax suffix.
    public static func isCompressible(contentType: String) -> Bool {
        // The exact, parameterless types a server sends most are answered without parsing.
        if compressibleTypes.contains(contentType) { return true }
        let mediaType =
            contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: " \t").lowercased()
            } ?? ""
        if mediaType.hasPrefix("text/") { return true }
        if mediaType.hasSuffix("+json") || mediaType.hasSuffix("+xml") { return true }
        return compressibleTypes.contains(mediaType)
    }

    private static let compressibleTypes: Set<String> = [
        "application/json", "application/javascript", "application/xml", "application/x-ndjson",
        "application/yaml", "application/x-yaml", "application/x-www-form-urlencoded", "image/svg+xml",
        "application/wasm", "application/typescript",
    ]
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        guard let start = firstIndex(where: { !set.contains($0) }) else { return "" }
        let end = lastIndex(where: { !set.contains($0) })!
        return String(self[start...end])
    }
}
