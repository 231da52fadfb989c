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
