import HTTPServer
import JetstreamModel
import ScopeEngine

/// The one place Server-Sent Events are framed: every scope event (`changeset`, `snapshot`,
/// `reset`, `deleted`, `closing`), the `retry:` preamble and the `error` farewell. A scope event
/// is framed once and the same bytes go to every stream, whether it arrives live, in a catch-up
/// from memory or the store, or after recovery.
///
/// ```swift
/// stream.sendEncoded(SSEFrame.frame(event))   // framed on first use, then reused
/// ```
public enum SSEFrame {
    /// The frame of `event`, made once per event.
    public static func frame(_ event: ScopeEvent) -> EncodedEvent {
        event.encoded(by: encode)
    }

    private static func encode(_ event: ScopeEvent) -> EncodedEvent {
        frame(name: event.kind.rawValue, id: event.version, json: event.payload)
    }

    /// An event whose data is one line of JSON, framed without re-encoding the JSON.
    static func frame(name: String, id: Int?, json: [UInt8]) -> EncodedEvent {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + name.utf8.count + 32)
        bytes.append(contentsOf: "event: \(name)\n".utf8)
        if let id { bytes.append(contentsOf: "id: \(id)\n".utf8) }
        bytes.append(contentsOf: "data: ".utf8)
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return EncodedEvent(payload: bytes)
    }

    /// The first bytes of every stream: the reconnection delay.
    static func retry(milliseconds: Int) -> EncodedEvent {
        EncodedEvent(payload: Array("retry: \(milliseconds)\n\n".utf8))
    }

    /// `event: error` carrying `problem`, without an `id` (the client's resume point stays the
    /// last change set it received).
    static func error(_ problem: Problem) -> EncodedEvent {
        frame(name: "error", id: nil, json: JSONValue.object(problem.jsonObject).encoded())
    }
}
