import JetstreamJSON

/// Who else is in a scope, and what this client shows them (docs/sync-protocol.md, "Presence"):
/// not a change — no version, nothing logged, forgotten by a restart.
///
/// ```swift
/// try await sync.presence.set(["x": 120, "y": 80, "name": "Ada"])   // PUT …/presence/{client}
/// sync.presence.others                  // [PresenceMember]: the other clients, self excluded
/// sync.presence.onChange { others in drawPointers(others) }
/// await sync.stop()                     // the last handle's stop withdraws it (DELETE)
/// ```
///
/// This client is present under ``clientID`` (one per ``Client``), with the ttl of
/// ``Client/Configuration/presenceTTL``; the sync announces it again at half the ttl while it
/// runs. ``others`` comes from the `presence` events of the client's shared stream and starts over
/// at every (re)connection, when the server sends a `join` for each member present then.
public struct Presence: Sendable {
    let replica: ScopeReplica
    let owner: ScopeReplica.Owner

    /// This client's id in every scope's presence (``Client/presenceID``).
    public var clientID: String { replica.client.presenceID }

    /// The other clients present, in the order they joined (this client is never among them).
    public var others: [PresenceMember] { replica.roster.members }

    /// Shows `data` (a JSON object of at most 4 KiB) to the others: returns once a `PUT` that carries
    /// it — or later data set meanwhile — is answered. Sets made in quick succession are coalesced:
    /// only the newest waiting one is sent.
    ///
    /// - Throws: ``ClientError``: the server refused it (`413` too large, `403` another subject's
    ///   client id, `429` the scope is full), could not be reached (a retry follows by itself), or
    ///   the sync stopped.
    public func set(_ data: JSONObject, isolation: isolated (any Actor) = #isolation) async throws(ClientError) {
        try await replica.setPresence(data, isolation: replica.actor).get()
    }

    /// Calls `handler` with ``others`` whenever it changes (until this handle stops).
    public func onChange(_ handler: @escaping ([PresenceMember]) -> Void) {
        replica.presenceHandlers.append((owner, handler))
    }
}
