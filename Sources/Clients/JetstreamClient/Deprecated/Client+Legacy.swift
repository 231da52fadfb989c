import Foundation
import Jetstream

/// The original `Client`'s spellings: `Client(options:)`, `connect()`, `onSession`, `close()`.
///
/// The original opened a WebSocket, created a session on it and fetched scopes through the
/// session. The gateway is plain HTTP: there is nothing to connect and no session to create, and
/// `client.fetch(scope)` does the whole fetch. These keep ported code running meanwhile:
/// `connect()` makes a ``Session`` that `onSession` delivers on the next turn of the main actor,
/// and `session.fetch(scope)` is `client.fetch(scope)`.
extension Client {
    /// A client of the gateway at the options' URL (`ws://host` is `http://host`); nil when the URL
    /// is missing or of another scheme.
    @available(*, deprecated, message: "use Client(url:) with the gateway's http:// URL, then client.fetch(scope)")
    public init?(options: WebSocketConnectionOptions) {
        guard let url = options.gatewayURL else { return nil }
        self.init(url: url, transport: LegacySessionTransport())
    }

    /// Makes the client's session (no connection is opened: the gateway is HTTP) and delivers it to
    /// the `onSession` listeners on the next turn of the main actor. Once only.
    @available(*, deprecated, message: "nothing to connect over HTTP: call client.fetch(scope) directly")
    @MainActor
    public func connect() {
        legacySessions.connect(client: self)
    }

    /// The original's `client.onSession.listen(self) { session in … }`: the session `connect()` makes.
    @available(*, deprecated, message: "no WebSocket session: `let sync = try await client.fetch(scope)`")
    @MainActor
    public var onSession: LegacySignal<Session> {
        let sessions = legacySessions
        return LegacySignal { callback in sessions.addListener(callback) }
    }

    /// The session `connect()` made, once delivered.
    @available(*, deprecated, message: "no WebSocket session: keep the ScopeSync that client.fetch(scope) returns")
    @MainActor
    public var session: Session? {
        legacySessions.session
    }

    /// Stops the syncs of the session and forgets it (a later `connect()` makes a new one).
    @available(*, deprecated, message: "stop each ScopeSync: await sync.stop()")
    @MainActor
    public func close() {
        legacySessions.session?.close()
        legacySessions.session = nil
    }

    @available(*, deprecated, message: "only behind the deprecated Client(options:)")
    @MainActor
    private var legacySessions: LegacySessionTransport {
        guard let sessions = transport as? LegacySessionTransport else {
            preconditionFailure("connect(), onSession and close() belong to a client made by Client(options:)")
        }
        return sessions
    }
}
