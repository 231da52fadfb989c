/// Limits and settings of one HTTP/2 server connection.
///
/// The defaults bound what one connection can make the server hold:
/// - request bodies: at most ``maxRequestBodySize`` per stream (larger ones get 413) and
///   ``maxBufferedRequestBytes`` across the streams still uploading (beyond that new data
///   resets the stream with REFUSED_STREAM, which a client may retry);
/// - response bytes queued by ``HTTP2ServerSession/write(_:to:)``: ``maxPendingBytesPerStream``
///   per stream; a stream over the cap reports ``HTTP2WriteResult/overflow`` so the caller can
///   drop a slow SSE subscriber instead of buffering without end;
/// - streams: ``maxConcurrentStreams`` open at once (SETTINGS_MAX_CONCURRENT_STREAMS; nghttp2
///   refuses more with RST_STREAM REFUSED_STREAM), and the rapid-reset limiter (CVE-2023-44487):
///   a token bucket of ``resetBurst`` RST_STREAMs refilled at ``resetRatePerSecond``, after
///   which nghttp2 sends GOAWAY and the connection ends.
///
/// ```swift
/// var configuration = HTTP2Configuration()
/// configuration.maxConcurrentStreams = 256  // many SSE streams on one connection
/// let session = try HTTP2ServerSession(configuration: configuration)
/// ```
public struct HTTP2Configuration: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS. RFC 9113 recommends at least 100.
    public var maxConcurrentStreams: UInt32 = 100
    /// SETTINGS_INITIAL_WINDOW_SIZE for request bodies; nghttp2 re-opens it as data is received.
    public var initialWindowSize: UInt32 = 65_535
    /// The connection-level receive window (WINDOW_UPDATE on stream 0), shared by all uploads.
    public var connectionWindowSize: Int32 = 1 << 20
    /// SETTINGS_MAX_HEADER_LIST_SIZE (sum of name + value + 32 per field); larger → 431.
    public var maxHeaderListSize: UInt32 = 16_384
    /// Request bodies larger than this are answered with 413 and the stream is reset.
    public var maxRequestBodySize: Int = 1 << 20
    /// Total body bytes buffered for requests not yet complete, across all streams.
    public var maxBufferedRequestBytes: Int = 8 << 20
    /// Response bytes queued per stream before ``HTTP2ServerSession/write(_:to:)`` reports overflow.
    public var maxPendingBytesPerStream: Int = 256 << 10
    /// Rapid-reset limiter: RST_STREAM frames allowed in a burst.
    public var resetBurst: UInt64 = 1000
    /// Rapid-reset limiter: tokens regained per second.
    public var resetRatePerSecond: UInt64 = 33

    public init() {}
}
