/// The event stream's connection state machine (docs/sync-protocol.md, "The stream"): how each
/// connection ended decides the next one. Pure: no I/O, no clock — the caller says how long the
/// connection lasted.
///
/// ```
///                 opened                      ended: closing · gap · inconsistent ·
///   connecting ───────────▶ live ──────────▶  auth-expired · 401 ──▶ reconnecting(0) ─▶ (connect)
///        ▲                   │                 (at once; again within 1 s: backs off)
///        │                   │ ended: dropped · error · 5xx · silence
///        │                   ▼
///        └────────── reconnecting(k) ◀── backoff k = 1, 2, …  (k starts over after a connection of 60 s)
///
///   ended: deleted · 404 ──▶ stopped(deleted)        ended: 403 ──▶ stopped(forbidden)
/// ```
///
/// ```swift
/// var connection = StreamConnection()
/// connection.opened()                                         // .live
/// connection.ended(.closing, lasted: .seconds(30))            // .reconnectNow(refreshToken: false)
/// connection.lastEventID(confirmed: 41)                       // 41, or nil for a full state
/// ```
struct StreamConnection: Sendable, Equatable {
    /// How one connection ended.
    enum End: Sendable, Equatable {
        /// `event: closing`: the server drains; another node takes over.
        case closing
        /// An event ahead of the confirmed version + 1.
        case gap
        /// An event at the confirmed version + 1 that does not apply to the confirmed state: the
        /// stream and this client disagree, so the next connection asks for a full state.
        case inconsistent
        /// `event: auth-expired`, or `401` when the stream opened.
        case unauthorized
        /// A network error, a dropped stream, `event: error`, a status other than 200/401/403/404,
        /// two heartbeat intervals of silence, an event that cannot be read.
        case dropped(needsFullState: Bool)
        /// `event: deleted`, or `404` when the stream opened.
        case deleted
        /// `403` when the stream opened.
        case forbidden(String)
    }

    /// What to do after a connection ended.
    enum Decision: Sendable, Equatable {
        case reconnectNow(refreshToken: Bool)
        /// Wait `Backoff.delay(attempt: attempt - 1)`, then reconnect.
        case backOff(attempt: Int, refreshToken: Bool)
        case stop(ScopeSync.StopReason)
    }

    /// After a reconnection at once, the next connection must last this long for its own
    /// at-once end to reconnect at once too; a shorter one backs off (a draining server answers
    /// every new stream with `closing`, a provider with no valid token gets `401` after `401`).
    static let minimumImmediateLifetime = Duration.seconds(1)
    /// A connection that lasted this long was healthy: the backoff starts over.
    static let healthyLifetime = Duration.seconds(60)

    private(set) var status: ScopeSync.Status = .connecting
    /// Whether the next connection asks for a full state (no `Last-Event-ID`).
    private(set) var needsFullState = false
    /// Backoffs since the backoff last started over.
    private var attempt = 0
    /// Whether the previous connection ended with a reconnection at once.
    private var endedAtOnce = false

    /// The stream answered `200`: live, and the full state (if asked for) is on its way.
    mutating func opened() {
        status = .live
        needsFullState = false
    }

    /// The `Last-Event-ID` of the next connection: the confirmed version, or nil for a full state.
    func lastEventID(confirmed version: Int) -> Int? {
        needsFullState ? nil : version
    }

    /// The client reconnects by its own choice, not after a failure: it resumes after a suspension,
    /// or the network it was waiting for came back. The backoff starts over (the next failure waits
    /// the shortest ceiling) and the next end is judged as the first; a stream that was ever up shows
    /// `.reconnecting(attempt: 0)`, as for a reconnection at once.
    mutating func startOver() {
        attempt = 0
        endedAtOnce = false
        if status != .connecting { status = .reconnecting(attempt: 0) }
    }

    /// The sync stopped (by the application, or a decision to stop).
    mutating func stopped(_ reason: ScopeSync.StopReason) {
        status = .stopped(reason: reason)
    }

    mutating func ended(_ end: End, lasted: Duration) -> Decision {
        if lasted > Self.healthyLifetime { attempt = 0 }
        let refreshToken: Bool
        switch end {
        case .deleted:
            stopped(.deleted)
            return .stop(.deleted)
        case .forbidden(let detail):
            stopped(.forbidden(detail))
            return .stop(.forbidden(detail))
        case .dropped(let needsFullState):
            self.needsFullState = self.needsFullState || needsFullState
            endedAtOnce = false
            return backOff(refreshToken: false)
        case .inconsistent:
            needsFullState = true
            refreshToken = false
        case .closing, .gap:
            refreshToken = false
        case .unauthorized:
            refreshToken = true
        }
        let spinning = endedAtOnce && lasted < Self.minimumImmediateLifetime
        endedAtOnce = true
        if spinning { return backOff(refreshToken: refreshToken) }
        status = .reconnecting(attempt: 0)
        return .reconnectNow(refreshToken: refreshToken)
    }

    private mutating func backOff(refreshToken: Bool) -> Decision {
        attempt += 1
        status = .reconnecting(attempt: attempt)
        return .backOff(attempt: attempt, refreshToken: refreshToken)
    }
}

extension StreamConnection.End {
    /// The end an SSE event of the stream means, nil for an event that keeps the connection.
    init?(eventType: String) {
        switch eventType {
        case "closing": self = .closing
        case "auth-expired": self = .unauthorized
        case "deleted": self = .deleted
        case "error": self = .dropped(needsFullState: false)
        default: return nil
        }
    }

    /// The end a stream response's status means, nil for `200`.
    init?(openingStatus status: Int, scope: String) {
        switch status {
        case 200: return nil
        case 401: self = .unauthorized
        case 403: self = .forbidden("the server refuses this client scope \(scope)")
        case 404: self = .deleted
        default: self = .dropped(needsFullState: false)
        }
    }
}

extension SyncEngine.EventOutcome {
    /// The end a `changeset` event's outcome means for the connection, nil when it goes on.
    var streamEnd: StreamConnection.End? {
        switch self {
        case .stale, .applied: nil
        case .gap: .gap
        case .inconsistent: .inconsistent
        }
    }
}
