import Logging
import Store

/// Presence across nodes (docs/store.md, "Presence across nodes"): short JSON texts sent with
/// `NOTIFY jetstream_presence` on a connection of their own (``PostgresPresencePublisher``) and
/// received by the listener, which also `LISTEN`s on that channel. The store keeps bytes: it
/// neither reads nor writes what a text says, except the `"node"` member it puts first, by which
/// each node knows its own texts when they come back and drops them.
///
/// ```swift
/// store.followPresence { text in print(text) }             // other nodes' texts, never our own
/// store.publishPresence(#"{"scope":"canvas-1","client":"w7","leave":true}"#)
/// // sends {"node":"<presenceNodeID>","scope":"canvas-1","client":"w7","leave":true}
/// ```
extension PostgresStore {
    /// The largest payload PostgreSQL's `NOTIFY` takes, in bytes (it refuses 8000 and more).
    public static let maximumPresencePayload = 7999

    /// Sends a JSON object's text to every other node following presence on this database, with
    /// `"node":"<presenceNodeID>"` as its first member. Returns false, sending nothing, when
    /// `object` is not a JSON object's text, when the result would exceed
    /// ``maximumPresencePayload`` (logged), or once the store is closed. Returns at once: the text
    /// is sent on the presence connection's thread, off the writers' path.
    @discardableResult
    public func publishPresence(_ object: String) -> Bool {
        guard object.utf8.first == UInt8(ascii: "{"), object.utf8.last == UInt8(ascii: "}") else {
            logger.warning("presence text is not a JSON object; not sent", metadata: ["text": "\(object.prefix(80))"])
            return false
        }
        let members = object.dropFirst()
        let payload = presencePrefix + (members == "}" ? "" : ",") + members
        guard payload.utf8.count <= Self.maximumPresencePayload else {
            logger.warning(
                "presence notice too large for NOTIFY; not sent",
                metadata: ["bytes": "\(payload.utf8.count)", "limit": "\(Self.maximumPresencePayload)"])
            return false
        }
        return presencePublisher.publish(payload)
    }

    /// Delivers, on the listener's thread, every presence text another node sends from now on
    /// (this node's own are dropped), whole: `{"node":…,…}`. A text sent while this node's
    /// listener was reconnecting is lost; presence is refreshed by its members, so the next
    /// refresh brings it.
    public func followPresence(_ handler: @escaping @Sendable (String) -> Void) {
        let own = presencePrefix
        listener.followPresence { payload in
            guard !payload.hasPrefix(own) else { return }
            handler(payload)
        }
    }

    /// `{"node":"<id>"`: how every presence text of this store begins.
    var presencePrefix: String { #"{"node":""# + presenceNodeID + #"""# }
}

extension PostgresStatements {
    /// The channel presence texts travel on (``PostgresStore/publishPresence(_:)``).
    static let presenceChannel = "jetstream_presence"

    /// One presence text; its transaction sets `synchronous_commit = off` (see ``PostgresPresencePublisher``).
    static let presenceNotify = PGStatement(
        "js_presence_notify", "SELECT pg_notify('\(presenceChannel)', $1)", types: [PGValue.textOID])
}
