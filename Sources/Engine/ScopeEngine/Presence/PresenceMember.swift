import JetstreamModel

/// One client present in a scope: who (its client id, chosen by the client, and the token's
/// subject), what it shares (a JSON object: a pointer, a selection, a name) and until when.
/// Presence is not a change: it has no version and is never logged (docs/presence.md).
public struct PresenceMember: Sendable, Equatable {
    public var client: String
    public var subject: String?
    public var data: JSONValue
    /// Milliseconds since 1970 at which it leaves unless refreshed (the same instant on every node).
    public var expiresAt: Int64

    public init(client: String, subject: String?, data: JSONValue, expiresAt: Int64) {
        self.client = client
        self.subject = subject
        self.data = data
        self.expiresAt = expiresAt
    }

    /// `{"client","subject","data","expiresAt"}` as `GET …/presence` lists it.
    func write(to writer: inout JSONWriter) {
        writer.writeRaw(#"{"client":"#)
        writer.write(string: client)
        writer.writeRaw(#","subject":"#)
        if let subject { writer.write(string: subject) } else { writer.writeRaw("null") }
        writer.writeRaw(#","data":"#)
        writer.write(data)
        writer.writeRaw(#","expiresAt":"#)
        writer.write(string: ChangeTime.rfc3339(millisecondsSince1970: expiresAt))
        writer.writeRaw("}")
    }

    /// What a presence event says of a member.
    public enum Change: String, Sendable {
        case join, update, leave
    }

    /// The `event: presence` of `change` to this member in `scope`:
    /// `{"scope","client","subject","state","data"}` (`data` absent on `leave`), without an `id:`.
    func event(_ change: Change, scope: String) -> ScopeEvent {
        var writer = JSONWriter(capacity: 96 + scope.utf8.count)
        writer.writeRaw(#"{"scope":"#)
        writer.write(string: scope)
        writer.writeRaw(#","client":"#)
        writer.write(string: client)
        writer.writeRaw(#","subject":"#)
        if let subject { writer.write(string: subject) } else { writer.writeRaw("null") }
        writer.writeRaw(#","state":"#)
        writer.write(string: change.rawValue)
        if change != .leave {
            writer.writeRaw(#","data":"#)
            writer.write(data)
        }
        writer.writeRaw("}")
        return ScopeEvent(kind: .presence, version: nil, payload: writer.bytes)
    }
}

/// A presence change made on another node of a shared store, or to be told to the others.
public struct PresenceNotice: Sendable, Equatable {
    public var scope: String
    /// nil: the client left.
    public var member: PresenceMember?
    public var client: String

    public init(scope: String, client: String, member: PresenceMember?) {
        self.scope = scope
        self.client = client
        self.member = member
    }
}

/// How presence reaches the other nodes of a shared store (PostgreSQL: `NOTIFY`): the engine
/// publishes each local change and applies the others' (``ScopeEngine/applyRemotePresence(_:)``).
public protocol PresenceRelay: Sendable {
    func publish(_ notice: PresenceNotice)
    func follow(_ handler: @escaping @Sendable (PresenceNotice) -> Void)
}
