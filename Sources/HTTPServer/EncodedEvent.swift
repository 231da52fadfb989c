import HTTP1
import SocketLoop

/// An event encoded once, shared by every stream it is written to: one immutable buffer laid
/// out as an HTTP/1.1 chunk (`<hex length>\r\n<event>\r\n`), so HTTP/1.1 streams write the whole
/// buffer and other transports (HTTP/1.0, HTTP/2 DATA) write the ``payload`` part of the same
/// buffer. No per-subscriber copy.
///
/// ```swift
/// let event = SSEEvent(id: "7", data: "hello").encoded()
/// for stream in streams { stream.sendEncoded(event) }
/// ```
public final class EncodedEvent: Sendable {
    /// The buffer holding the chunk framing and the event.
    public let storage: SharedBytes
    private let payloadRange: Range<Int>

    /// Encodes `payload` (complete SSE wire text, ending in an empty line).
    public init(payload: [UInt8]) {
        let header = HTTP1ResponseEncoder.chunkHeader(length: payload.count)
        storage = SharedBytes(parts: [header, payload, [13, 10]])
        payloadRange = header.count..<(header.count + payload.count)
    }

    /// The event's SSE bytes alone.
    public var payload: ByteSlice { ByteSlice(storage, range: payloadRange) }
    /// The event framed as one HTTP/1.1 chunk.
    public var chunk: ByteSlice { ByteSlice(storage) }
    /// A copy of the SSE bytes (for tests and per-stream transforms such as gzip).
    public var payloadBytes: [UInt8] { storage.withUnsafeBytes { Array($0[payloadRange]) } }

    /// `: keep-alive`, the heartbeat comment.
    public static let heartbeat = SSEEvent.comment("keep-alive")
}
