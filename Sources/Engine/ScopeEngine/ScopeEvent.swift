import Foundation
import JetstreamModel
import Synchronization

/// One event of a scope's stream: a change set, the full state, or the end of the stream. Its
/// JSON payload is encoded once; a transport frames it once too (``encoded(by:)`` keeps the first
/// framing), so live fan-out, catch-up and recovery all write the same bytes.
///
/// ```swift
/// let frame: EncodedEvent = event.encoded(by: SSEFrame.encode)   // framed on first use only
/// ```
public final class ScopeEvent: Sendable {
    public enum Kind: String, Sendable {
        /// `{"version","fragments","removed"}`: one accepted change set.
        case changeset
        /// The full state, for a subscriber without a resume point.
        case snapshot
        /// The full state, for a subscriber whose resume point cannot be served exactly.
        case reset
        /// The scope was deleted; the stream ends.
        case deleted
        /// The engine drains for shutdown; the stream ends (reconnect elsewhere and resume).
        case closing
        /// A client joined, updated or left the scope's presence (no version: it never moves a
        /// resume position).
        case presence
    }

    public let kind: Kind
    /// The version the event brings the subscriber to (the SSE `id`); nil for `deleted`/`closing`,
    /// which must not move a client's resume point.
    public let version: Int?
    /// One line of JSON.
    public let payload: [UInt8]
    private let framing = Mutex<(any Sendable)?>(nil)
    private let sharedFraming = Mutex<(any Sendable)?>(nil)

    public init(kind: Kind, version: Int?, payload: [UInt8]) {
        self.kind = kind
        self.version = version
        self.payload = payload
    }

    /// The transport's encoding of this event, made by `encode` on the first call and kept. An
    /// engine has one transport encoding per event (the gateway's SSE frame).
    public func encoded<Encoding: Sendable>(by encode: (ScopeEvent) -> Encoding) -> Encoding {
        if let cached = framing.withLock({ $0 }) as? Encoding { return cached }
        let made = encode(self)
        framing.withLock { $0 = made }
        return made
    }

    /// A second transport encoding, kept beside ``encoded(by:)``'s: the part of the event that
    /// streams carrying several scopes share (the gateway's scope-tagged data line), while each
    /// such stream frames its own `id:`.
    public func sharedEncoding<Encoding: Sendable>(by encode: (ScopeEvent) -> Encoding) -> Encoding {
        if let cached = sharedFraming.withLock({ $0 }) as? Encoding { return cached }
        let made = encode(self)
        sharedFraming.withLock { $0 = made }
        return made
    }

    /// The event of an accepted change set: `{"version","fragments","removed"}` as the model
    /// writes it (stored, streamed and returned by history byte for byte the same).
    public static func changeset(_ applied: AppliedChangeSet) -> ScopeEvent {
        ChangeSetPayload(applied).event
    }

    /// `event: closing`, sent to every stream when the engine drains.
    public static let closing = ScopeEvent(kind: .closing, version: nil, payload: Array(#"{"reason":"shutdown"}"#.utf8))

    static func deleted(name: String, version: Int) -> ScopeEvent {
        var writer = JSONWriter(capacity: 48 + name.utf8.count)
        writer.write(["name": .string(name), "version": .number(JSONNumber(version))])
        return ScopeEvent(kind: .deleted, version: nil, payload: writer.bytes)
    }
}

/// What the engine encodes, once per version: change-set payloads (stored, streamed and returned
/// by history, byte for byte the same), full states and stored snapshots.
public enum ScopeEncoding {
    /// `{"name","version","rootUUID","fragments":[…]}` — `GET` on a scope, `snapshot` and `reset`
    /// events (streamed from the state, no intermediate tree).
    public static func stateJSON(name: String, state: ScopeState) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + state.count * 128)
        state.writeState(name: name, to: &writer)
        return writer.bytes
    }

    /// `{"rootUUID","fragments"}` — the stored snapshot — with `"owners":{"<uuid>":"<subject>"}`
    /// when some object has an owner (fragments carry none). It carries no version: the store
    /// keeps that, and a re-created scope starts at a version the store assigns.
    public static func snapshotJSON(state: ScopeState) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + state.count * 128)
        writer.writeRaw(#"{"rootUUID":"#)
        writer.write(string: state.rootUUID.wireString)
        writer.writeRaw(#","fragments":["#)
        for (index, fragment) in state.exportFragments().enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw("]")
        let owners = state.owners
        if !owners.isEmpty {
            writer.writeRaw(#","owners":{"#)
            // Sorted, so that equal states store equal bytes.
            for (index, entry) in owners.sorted(by: { $0.key.wireString < $1.key.wireString }).enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.write(string: entry.key.wireString)
                writer.writeRaw(":")
                writer.write(string: entry.value)
            }
            writer.writeRaw("}")
        }
        writer.writeRaw("}")
        return writer.bytes
    }

    /// The owners a stored snapshot names (none in one written before owners were recorded).
    static func owners(inSnapshot snapshot: JSONValue) -> [UUID: String] {
        guard case .object(let members)? = snapshot["owners"] else { return [:] }
        var owners: [UUID: String] = [:]
        for member in members {
            if let uuid = UUID(wireString: member.key), let owner = member.value.string { owners[uuid] = owner }
        }
        return owners
    }

    /// `{"version":C,"changesets":[…]}`: a page of history around stored payloads.
    static func historyJSON(current: Int, payloads: some Sequence<[UInt8]>, capacity: Int = 0) -> [UInt8] {
        var body = Array(#"{"version":\#(current),"changesets":["#.utf8)
        body.reserveCapacity(capacity)
        var first = true
        for payload in payloads {
            if !first { body.append(UInt8(ascii: ",")) }
            first = false
            body.append(contentsOf: payload)
        }
        body.append(contentsOf: "]}".utf8)
        return body
    }
}

/// One accepted change set, encoded once: the stored payload, from which the event and the
/// writer's answer are made without re-encoding.
struct ChangeSetPayload: Sendable {
    let version: Int
    let bytes: [UInt8]

    /// `{"version":V,"fragments":[…],"removed":[…]}`, written by the model core straight from the
    /// applied change set; with `"idempotencyKey":"K"` after the version when the writer sent
    /// one, then the origin (`"at"`, `"subject"`, `"restoredFrom"`, `"revertOf"`). All of it is
    /// part of what is stored, so catch-up, history and other nodes carry it too.
    init(_ applied: AppliedChangeSet, idempotencyKey: String? = nil, origin: ChangeOrigin? = nil, at time: String = "")
    {
        var writer = JSONWriter(capacity: 256)
        applied.writeEvent(to: &writer, idempotencyKey: idempotencyKey) { writer in
            origin?.write(at: time, to: &writer)
        }
        version = applied.state.version
        bytes = writer.bytes
    }

    init(version: Int, bytes: [UInt8]) {
        self.version = version
        self.bytes = bytes
    }

    var event: ScopeEvent { ScopeEvent(kind: .changeset, version: version, payload: bytes) }

    /// The writer's answer `{"version","fragmentReplies":[{},…],"fragments","removed"}`: the
    /// payload with the replies spliced in after its version.
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
