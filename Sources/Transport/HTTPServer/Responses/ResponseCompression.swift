import HTTPCompression
import HTTPTypes

/// gzip/deflate for responses, applied in ``ResponseFinalizer`` for every protocol: a body is
/// compressed when the request's `Accept-Encoding` allows it and ``CompressionPolicy`` finds it
/// worth it (textual type, at least 1 KiB, not already encoded). Event streams are compressed
/// per event by an ``EventStreamCompressor`` on their sink.
///
/// ```swift
/// var response = HTTPServerResponse.json(bigJSON)
/// ResponseCompression.apply(to: &response, for: request)  // Content-Encoding: gzip, Vary: Accept-Encoding
/// ```
enum ResponseCompression {
    static let policy = CompressionPolicy()

    static func acceptEncoding(of request: HTTPServerRequest) -> String? {
        request.headerFields.value(of: .acceptEncoding)
    }

    /// Compresses `response.body` in place when worthwhile and accepted; adds `Vary` whenever the
    /// body is of a kind that could be compressed, so caches keep the variants apart.
    static func apply(to response: inout HTTPServerResponse, for request: HTTPServerRequest) {
        let status = response.head.status.code
        guard response.sharedBody == nil, !response.body.isEmpty, (200...599).contains(status), status != 204,
            status != 304,
            !response.head.headerFields.contains(.contentRange)
        else { return }
        let fields = response.head.headerFields
        let contentType = fields.value(of: .contentType)
        let existingEncoding = fields.value(of: .contentEncoding)
        guard
            policy.isEligible(
                contentType: contentType, contentEncoding: existingEncoding, bodySize: response.body.count)
        else { return }
        addVary(to: &response.head)
        guard
            let coding = policy.coding(
                acceptEncoding: acceptEncoding(of: request), contentType: contentType,
                contentEncoding: existingEncoding, bodySize: response.body.count),
            let compressed = try? OneShot.compress(response.body, coding: coding),
            compressed.count < response.body.count
        else { return }
        response.body = compressed
        response.head.headerFields[.contentEncoding] = coding.headerValue
        response.head.headerFields[.contentLength] = nil
    }

    /// For an event stream head: when the client accepts gzip or deflate, sets `Content-Encoding`
    /// and `Vary` and returns the compressor the stream's sink must use.
    static func negotiateEventStream(
        _ head: inout HTTPResponse, for request: HTTPServerRequest
    ) -> EventStreamCompressor? {
        guard
            let coding = policy.coding(
                acceptEncoding: acceptEncoding(of: request), contentType: head.headerFields[.contentType],
                contentEncoding: head.headerFields[.contentEncoding], bodySize: nil),
            let compressor = EventStreamCompressor(coding: coding)
        else { return nil }
        head.headerFields[.contentEncoding] = coding.headerValue
        addVary(to: &head)
        return compressor
    }

    private static func addVary(to head: inout HTTPResponse) {
        let existing = head.headerFields[values: .vary]
        guard !existing.contains(where: { $0.lowercased().contains("accept-encoding") || $0 == "*" }) else { return }
        head.headerFields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
    }
}

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
