/// A content coding this module can produce, as named in `Content-Encoding` (RFC 9110 §8.4.1).
///
/// `deflate` is the zlib format (RFC 1950), which is what HTTP means by "deflate"; raw deflate
/// streams are not produced.
///
/// ```swift
/// response.headerFields[.contentEncoding] = ContentCoding.gzip.headerValue  // "gzip"
/// ```
public enum ContentCoding: String, Sendable, Hashable, CaseIterable {
    case gzip
    case deflate

    /// The token to send in `Content-Encoding`.
    public var headerValue: String { rawValue }

    /// The zlib `windowBits` adjustment that selects this container format: +16 asks zlib for a
    /// gzip header and trailer, +0 for the zlib header and Adler-32 trailer.
    var windowBitsOffset: Int32 {
        switch self {
        case .gzip: 16
        case .deflate: 0
        }
    }
}
