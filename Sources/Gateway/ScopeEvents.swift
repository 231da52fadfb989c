import Foundation
import HTTPServer
import JetstreamModel

/// Encodes what the gateway writes, once per version: change-set payloads (stored, streamed and
/// returned by history, byte for byte the same), full states, and their SSE events.
enum ScopeEvents {
    /// `{"version":V,"fragments":[…],"removed":[…]}` — the stored record and the `changeset` event's
    /// data, written by the model core straight from the applied change set.
    static func changeSetPayload(_ applied: AppliedChangeSet) -> ChangeSetPayload {
        var writer = JSONWriter(capacity: 256)
        applied.writeEvent(to: &writer)
        return ChangeSetPayload(version: applied.state.version, bytes: writer.bytes)
    }

    /// `{"name","version","rootUUID","fragments":[…]}` — `GET` on a scope, `snapshot` and `reset` events
    /// (streamed from the state, no intermediate tree).
    static func stateJSON(name: String, state: ScopeState) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + state.count * 128)
        state.writeState(name: name, to: &writer)
        return writer.bytes
    }

    /// `{"rootUUID","fragments"}` — the stored snapshot. It carries no version: the store keeps that,
    /// and a re-created scope starts at a version the store assigns.
    static func snapshotJSON(state: ScopeState) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + state.count * 128)
        writer.writeRaw(#"{"rootUUID":"#)
        writer.write(string: state.rootUUID.wireString)
        writer.writeRaw(#","fragments":"#)
        writeFragments(of: state, to: &writer)
        writer.writeRaw("}")
        return writer.bytes
    }

    private static func writeFragments(of state: ScopeState, to writer: inout JSONWriter) {
        writer.writeRaw("[")
        for (index, fragment) in state.exportFragments().enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw("]")
    }

    /// An SSE event whose data is one line of JSON, framed without re-encoding the JSON.
    static func event(_ name: String, id: Int?, json: [UInt8]) -> EncodedEvent {
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
}

/// One accepted change set, encoded once: the stored payload, from which the SSE event and the
/// `200` answer are framed without re-encoding.
struct ChangeSetPayload: Sendable {
    let version: Int
    let bytes: [UInt8]

    /// The `changeset` SSE event around ``bytes``.
    var event: EncodedEvent { ScopeEvents.event("changeset", id: version, json: bytes) }

    /// The `200` answer `{"version","fragmentReplies":[{},…],"fragments","removed"}`: the payload
    /// with the replies spliced in after its version.
    func acceptedResponse(fragmentCount: Int) -> [UInt8] {
        let head = Array(#"{"version":\#(version),"#.utf8)
        var body: [UInt8] = []
        body.reserveCapacity(bytes.count + fragmentCount * 3 + 24)
        body.append(contentsOf: head)
        body.append(contentsOf: #""fragmentReplies":["#.utf8)
        for index in 0..<fragmentCount {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: "{}".utf8)
        }
        body.append(contentsOf: "],".utf8)
        // The model writes the version first (AppliedChangeSet.writeEvent), so the rest follows it.
        body.append(contentsOf: bytes.dropFirst(head.count))
        return body
    }
}
