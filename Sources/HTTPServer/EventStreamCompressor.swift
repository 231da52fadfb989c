import HTTPCompression

/// Compresses one event stream: every event becomes one self-contained compressed piece
/// (deflate with a sync flush), so it is written as one HTTP/1.1 chunk or one HTTP/2 DATA frame
/// and the client decodes it on arrival. Uses ``CompressionParameters/streaming``: 38 KB of zlib
/// state per stream (docs/http2-and-compression.md). Loop thread only.
///
/// ```swift
/// if let compressor = ResponseCompression.negotiateEventStream(&head, for: request) {
///     sink.compressor = compressor   // the sink writes compressor.compress(event) instead of event
/// }
/// ```
final class EventStreamCompressor {
    let coding: ContentCoding
    private let stream: CompressionStream

    init?(coding: ContentCoding) {
        guard let stream = try? CompressionStream(coding: coding, parameters: .streaming) else { return nil }
        self.coding = coding
        self.stream = stream
    }

    /// The event compressed and flushed, framed like any event (nil if zlib failed, which it does
    /// not for any input; the stream should then end).
    func compress(_ event: EncodedEvent) -> EncodedEvent? {
        guard let bytes = try? stream.write(event.payloadBytes) else { return nil }
        return EncodedEvent(payload: bytes)
    }

    /// The end of the compressed stream (gzip trailer), to write before the stream's end.
    func finish() -> EncodedEvent? {
        guard let bytes = try? stream.finish(), !bytes.isEmpty else { return nil }
        return EncodedEvent(payload: bytes)
    }
}
