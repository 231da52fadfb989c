import Foundation
import HTTPServer
import JetstreamModel

/// Encodes what the gateway writes, once per version: change-set payloads (stored, streamed and
/// returned by history, byte for byte the same), full states, and their SSE events.
enum ScopeEvents {
    /// `{"version":V,"fragments":[…],"removed":[…]}` — the stored record and the `changeset` event's data.
    static func changeSetPayload(version: Int, fragments: [SyncFragment], removed: [UUID]) -> ChangeSetPayload {
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw("[")
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw("]")
        let fragmentsJSON = writer.bytes
        writer = JSONWriter(capacity: 16 + removed.count * 40)
        writer.writeRaw("[")
        for (index, uuid) in removed.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(string: uuid.wireString)
        }
        writer.writeRaw("]")
        let removedJSON = writer.bytes

        var payload: [UInt8] = []
        payload.reserveCapacity(fragmentsJSON.count + removedJSON.count + 48)
        payload.append(contentsOf: #"{"version":\#(version),"fragments":"#.utf8)
        payload.append(contentsOf: fragmentsJSON)
        payload.append(contentsOf: #","removed":"#.utf8)
        payload.append(contentsOf: removedJSON)
        payload.append(UInt8(ascii: "}"))
        return ChangeSetPayload(
            version: version, bytes: payload, fragmentsJSON: fragmentsJSON, removedJSON: removedJSON)
    }

    /// `{"name","version","rootUUID","fragments":[…]}` — `GET` on a scope, `snapshot` and `reset` events.
    static func stateJSON(name: String, state: ScopeState) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + state.count * 128)
        writer.writeRaw(#"{"name":"#)
        writer.write(string: name)
        writer.writeRaw(#","version":\#(state.version),"rootUUID":"#)
        writer.write(string: state.rootUUID.wireString)
        writer.writeRaw(#","fragments":"#)
        writeFragments(of: state, to: &writer)
        writer.writeRaw("}")
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

/// One accepted change set, encoded once: the stored payload and the parts the POST answer reuses.
struct ChangeSetPayload: Sendable {
    let version: Int
    let bytes: [UInt8]
    let fragmentsJSON: [UInt8]
    let removedJSON: [UInt8]

    /// The `changeset` SSE event around ``bytes``.
    var event: EncodedEvent { ScopeEvents.event("changeset", id: version, json: bytes) }

    /// The `200` answer: `{"version","fragmentReplies":[{},…],"fragments","removed"}`.
    func acceptedResponse(fragmentCount: Int) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(bytes.count + fragmentCount * 3 + 32)
        body.append(contentsOf: #"{"version":\#(version),"fragmentReplies":["#.utf8)
        for index in 0..<fragmentCount {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: "{}".utf8)
        }
        body.append(contentsOf: #"],"fragments":"#.utf8)
        body.append(contentsOf: fragmentsJSON)
        body.append(contentsOf: #","removed":"#.utf8)
        body.append(contentsOf: removedJSON)
        body.append(UInt8(ascii: "}"))
        return body
    }
}
