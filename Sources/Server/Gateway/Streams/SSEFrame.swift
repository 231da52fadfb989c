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
        frame(name: name, id: id.map { Array(String($0).utf8) }, data: json)
    }

    /// An event with prepared data and an `id:` given as its bytes (a many-scope stream keeps its
    /// id so: ``ManyScopesEventID``).
    static func frame(name: String, id: [UInt8]?, data: [UInt8]) -> EncodedEvent {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + name.utf8.count + (id?.count ?? 0) + 24)
        bytes.append(contentsOf: "event: \(name)\n".utf8)
        if let id {
            bytes.append(contentsOf: "id: ".utf8)
            bytes.append(contentsOf: id)
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes.append(contentsOf: "data: ".utf8)
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: "\n\n".utf8)
        return EncodedEvent(payload: bytes)
    }

    /// The event's JSON with `"scope":"<name>"` first, for streams carrying several scopes: made
    /// once per event (``ScopeEngine/ScopeEvent/sharedEncoding(by:)``; an event is of one scope)
    /// and shared by all of them.
    static func scopeTagged(_ event: ScopeEvent, scope: String) -> [UInt8] {
        event.sharedEncoding { event in ScopeTaggedData(bytes: tag(event.payload, scope: scope)) }.bytes
    }

    /// `{"scope":"<name>",…}` from a JSON object's bytes, without parsing them.
    static func tag(_ json: [UInt8], scope: String) -> [UInt8] {
        var writer = JSONWriter(capacity: json.count + scope.utf8.count + 16)
        writer.writeRaw(#"{"scope":"#)
        writer.write(string: scope)
        var bytes = writer.bytes
        if json.count > 2 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: json.dropFirst())
        return bytes
    }

    private struct ScopeTaggedData: Sendable {
        let bytes: [UInt8]
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
