import HTTP1
import SocketLoop

/// One Server-Sent Event (WHATWG HTML §9.2). Multi-line data becomes several `data:` lines;
/// CR and LF are removed from `id` and `event` so a value can never inject a field.
///
/// ```swift
/// let event = SSEEvent(id: "42", event: "changeset", data: #"{"version":42}"#)
/// stream.send(event)
/// ```
public struct SSEEvent: Sendable, Hashable {
    public var id: String?
    public var event: String?
    public var data: String
    /// Reconnection delay in milliseconds for the client.
    public var retry: Int?

    public init(id: String? = nil, event: String? = nil, data: String, retry: Int? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }

    /// The wire form, ending in an empty line.
    public var serialized: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.utf8.count + 32)
        if let retry { Self.appendField("retry", String(retry), to: &bytes) }
        if let id { Self.appendField("id", Self.singleLine(id), to: &bytes) }
        if let event { Self.appendField("event", Self.singleLine(event), to: &bytes) }
        var line: [UInt8] = []
        var previousWasCR = false
        for byte in data.utf8 {
            if byte == 10 && previousWasCR {
                previousWasCR = false
                continue
            }
            previousWasCR = byte == 13
            if byte == 10 || byte == 13 {
                Self.appendField("data", line, to: &bytes)
                line.removeAll(keepingCapacity: true)
            } else {
                line.append(byte)
            }
        }
        Self.appendField("data", line, to: &bytes)
        bytes.append(10)
        return bytes
    }

    /// Encodes once into a buffer that can be written to any number of streams.
    public func encoded() -> EncodedEvent {
        EncodedEvent(payload: serialized)
    }

    /// A comment line (`: text`), ignored by clients; used as a heartbeat.
    public static func comment(_ text: String) -> EncodedEvent {
        EncodedEvent(payload: Array(": \(singleLine(text))\n\n".utf8))
    }

    private static func singleLine(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0 != "\r" && $0 != "\n" })
    }

    private static func appendField(_ name: String, _ value: String, to bytes: inout [UInt8]) {
        appendField(name, Array(value.utf8), to: &bytes)
    }

    private static func appendField(_ name: String, _ value: [UInt8], to bytes: inout [UInt8]) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
        bytes.append(contentsOf: value)
        bytes.append(10)
    }
}

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
