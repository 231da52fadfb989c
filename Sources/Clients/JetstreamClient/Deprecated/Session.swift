import Jetstream

/// The original's session: what `client.onSession` delivered once the WebSocket handshake was done,
/// and what fetched scopes (`session.fetch(scope) { error in … }`). The gateway has no sessions —
/// every request stands alone — so this one is only a handle on its ``Client``: ``fetch(_:callback:)``
/// is today's ``Client/fetch(_:createIfMissing:isolation:)`` over HTTP, on the main actor, and the
/// session keeps the ``ScopeSync``s it started until ``close()``.
@available(
    *, deprecated, message: "no WebSocket session: `let sync = try await client.fetch(scope)` returns the ScopeSync"
)
@MainActor
public final class Session {
    /// The client whose `connect()` made this session.
    public let client: Client
    /// The syncs ``fetch(_:callback:)`` started, in order; ``close()`` stops them.
    public private(set) var syncs: [ScopeSync] = []

    init(client: Client) {
        self.client = client
    }

    /// Fetches `scope` (the gateway's scope of the same name must exist) and keeps it in sync, as
    /// `client.fetch(scope)` does; `callback` gets nil once the state is applied, else the error.
    public func fetch(_ scope: Scope, callback: @escaping (ClientError?) -> Void) {
        Task { @MainActor in
            do throws(ClientError) {
                let sync = try await client.fetch(scope)
                syncs.append(sync)
                callback(nil)
            } catch {
                callback(error)
            }
        }
    }

    /// Stops every sync this session started (`ScopeSync.stop()`).
    public func close() {
        let stopping = syncs
        syncs = []
        for sync in stopping {
            Task { @MainActor in await sync.stop() }
        }
    }
}
