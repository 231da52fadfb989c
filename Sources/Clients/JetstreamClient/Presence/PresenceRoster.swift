import JetstreamJSON

/// The other clients present in one scope, as the `presence` events of the stream tell them
/// (docs/sync-protocol.md, "Presence"). Pure. The events carry no id and are not replayed: after a
/// (re)connection the server sends one `join` per current member, so the roster starts over then.
///
/// ```swift
/// var roster = PresenceRoster(ownClient: "me")
/// roster.apply(["client": "ada", "subject": nil, "state": "join", "data": ["x": 1]])   // true
/// roster.members.map(\.client)   // ["ada"]
/// ```
struct PresenceRoster: Sendable, Equatable {
    /// This client's own id: its own events are not about someone else.
    let ownClient: String
    /// In the order they joined.
    private(set) var members: [PresenceMember] = []

    /// Applies a `presence` event's data; true when ``members`` changed.
    mutating func apply(_ event: JSONValue) -> Bool {
        guard let client = event["client"]?.string, client != ownClient, let state = event["state"]?.string else {
            return false
        }
        let index = members.firstIndex { $0.client == client }
        switch state {
        case "join", "update":
            let member = PresenceMember(
                client: client, subject: event["subject"]?.string, data: event["data"]?.object ?? JSONObject())
            if let index {
                guard members[index] != member else { return false }
                members[index] = member
            } else {
                members.append(member)
            }
            return true
        case "leave":
            guard let index else { return false }
            members.remove(at: index)
            return true
        default:
            return false
        }
    }

    /// Forgets everyone (a new connection's joins follow); true when someone was known.
    @discardableResult
    mutating func clear() -> Bool {
        defer { members = [] }
        return !members.isEmpty
    }
}
