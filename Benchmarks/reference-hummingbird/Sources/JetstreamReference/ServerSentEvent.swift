import Foundation
import NIOCore
import NIOFoundationCompat

/// Builds the bytes of SSE frames. Frames are built once and the same `ByteBuffer` (copy-on-write,
/// so sharing is a reference count) is handed to every subscriber.
enum ServerSentEvent {
    /// Sent first on every stream: reconnect after 2 s.
    static let retry = ByteBuffer(string: "retry: 2000\n\n")

    /// The comment sent on idle streams so proxies keep them open.
    static let keepAlive = ByteBuffer(string: ": keep-alive\n\n")

    /// `event: NAME\nid: ID\ndata: JSON\n\n`, the JSON encoded straight into the frame.
    static func frame(event: String, id: Int, json: some Encodable, encoder: JSONEncoder) -> ByteBuffer {
        var buffer = ByteBuffer(string: "event: \(event)\nid: \(id)\ndata: ")
        do {
            try buffer.writeJSONEncodable(json, encoder: encoder)
        } catch {
            // Only non-finite numbers fail to encode, and JSON input cannot produce them.
            fatalError("cannot encode an event: \(error)")
        }
        buffer.writeString("\n\n")
        return buffer
    }

    /// `event: NAME\nid: ID\ndata: JSON\n\n` around JSON that is already encoded (the cached state).
    static func frame(event: String, id: Int, encodedJSON: ByteBuffer) -> ByteBuffer {
        var buffer = ByteBuffer(string: "event: \(event)\nid: \(id)\ndata: ")
        buffer.writeImmutableBuffer(encodedJSON)
        buffer.writeString("\n\n")
        return buffer
    }
}
