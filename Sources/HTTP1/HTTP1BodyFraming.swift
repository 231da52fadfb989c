/// How the body of a request is delimited (RFC 9112 §6.3).
public enum HTTP1BodyFraming: Sendable, Hashable {
    /// No body: neither `Content-Length` nor `Transfer-Encoding`.
    case none
    /// Exactly this many bytes follow the head.
    case contentLength(Int)
    /// `Transfer-Encoding: chunked`; decode with ``HTTP1ChunkedDecoder``.
    case chunked
}
