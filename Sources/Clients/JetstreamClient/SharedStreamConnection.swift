/// The state machine of a client's one event stream for all its scopes (`GET /v1/events?scope=…`,
/// docs/sync-protocol.md, "One stream for many scopes"): which scopes the next connection asks for,
/// where each starts, and — through the single-scope ``StreamConnection`` it wraps — how the end of a
/// connection decides the next one. Pure: no I/O, no clock — the caller says how long a connection lasted.
///
/// Each scope starts from the opaque `Last-Event-ID` once an id arrived on a connection that carried
/// it; before that (a scope just fetched, whose state came from `GET` at version V) and after a gap it
/// starts with `scope=NAME@V`. A scope that needs a full state is asked for without a position: the
/// request then carries no `Last-Event-ID` (it would give that scope its old position) and every
/// other scope its exact version as `@V`.
///
/// ```swift
/// var shared = SharedStreamConnection()
/// shared.add("canvas-1", version: 4)
/// shared.connecting().query            // ["canvas-1@4"]
/// shared.opened()
/// shared.delivered("canvas-1", version: 5, isState: false, eventID: "mAbc")
/// shared.add("canvas-2", version: 9)   // true: re-open the stream
/// shared.ended(.changed, lasted: .seconds(3))   // .reconnectNow(refreshToken: false)
/// shared.connecting()                  // ["canvas-1", "canvas-2@9"], Last-Event-ID: mAbc
/// ```
///
/// The client may be suspended (an app in the background): no connection is made until it resumes,
/// and the connection it closed is no failure — the next one, at resume, is made at once from the
/// same places.
struct SharedStreamConnection: Sendable, Equatable {
    /// Where a scope's events start on the next connection.
    enum Start: Sendable, Equatable {
        /// Where the last id received puts it.
        case lastEventID
        /// After this version (`scope=NAME@V`).
        case after(Int)
        /// From a snapshot (no position at all).
        case fullState
    }

    struct Member: Sendable, Equatable {
        let name: String
        var start: Start
        /// The confirmed version the scope's sync holds (as last reported).
        var version: Int
    }

    /// How one connection ended.
    enum End: Sendable, Equatable {
        /// The client ended it to carry another list of scopes.
        case changed
        /// The connection's own end: `closing`, `auth-expired`/`401`, dropped, silence, a `403` that
        /// names no scope.
        case stream(StreamConnection.End)
        /// One scope's end: a gap, an inconsistent event or one that cannot be read (the stream
        /// reconnects), or a `404`/`403` naming the scope when the stream opened (that scope stops).
        case scope(String, StreamConnection.End)
    }

    enum Decision: Sendable, Equatable {
        case reconnectNow(refreshToken: Bool)
        /// Wait `Backoff.delay(attempt: attempt - 1)`, then reconnect.
        case backOff(attempt: Int, refreshToken: Bool)
        /// No scope left: no connection until one is added.
        case idle
        /// The client is suspended: no connection until it resumes.
        case suspended
        /// Every scope stops.
        case stop(ScopeSync.StopReason)
    }

    /// One connection's request: the `scope` query values in order and the `Last-Event-ID`.
    struct Request: Sendable, Equatable {
        let query: [String]
        let lastEventID: String?
    }

    private(set) var members: [Member] = []
    private(set) var lastEventID: String?
    /// Status, backoff and the at-once guard, as for a single scope's stream.
    private(set) var connection = StreamConnection()
    /// The scopes the current (or last) connection asked for.
    private(set) var carried: Set<String> = []
    /// Between ``suspend()`` and ``resume()``.
    private(set) var isSuspended = false

    var isEmpty: Bool { members.isEmpty }

    /// A scope the client fetched at `version`. True when a connection is needed or must be
    /// re-opened to carry it. A scope already carried is fetched again into another copy: the
    /// stream goes on as it is when that copy is at or ahead of the stream (the events it already
    /// has are stale for it), else it re-opens from the copy's version (stale for the other copies).
    @discardableResult
    mutating func add(_ name: String, version: Int) -> Bool {
        guard let index = members.firstIndex(where: { $0.name == name }) else {
            members.append(Member(name: name, start: .after(version), version: version))
            return true
        }
        guard version < members[index].version else { return false }
        members[index].start = .after(version)
        members[index].version = version
        return true
    }

    /// A scope the client no longer follows. True when the current connection carries it (so it
    /// should be re-opened without it, or closed when no scope is left).
    @discardableResult
    mutating func remove(_ name: String) -> Bool {
        members.removeAll { $0.name == name }
        return carried.contains(name)
    }

    /// The status a scope's sync shows: live once a connection that carries it is open.
    func status(of name: String) -> ScopeSync.Status {
        if connection.status == .live && !carried.contains(name) { return .connecting }
        return connection.status
    }

    /// The request of the next connection (see the type's comment).
    var request: Request {
        let fromID = lastEventID != nil && !members.contains { $0.start == .fullState }
        let query = members.map { member in
            switch member.start {
            case .lastEventID: fromID ? member.name : "\(member.name)@\(member.version)"
            case .after(let version): "\(member.name)@\(version)"
            case .fullState: member.name
            }
        }
        return Request(query: query, lastEventID: fromID ? lastEventID : nil)
    }

    /// A connection is made with ``request``.
    mutating func connecting() -> Request {
        carried = Set(members.map(\.name))
        return request
    }

    /// The stream answered `200`.
    mutating func opened() {
        connection.opened()
    }

    /// A `snapshot`, `reset` (`isState`) or `changeset` event of `name` was applied; the scope's
    /// copies are now at `version` (the lowest, when there are several). An id moves every scope of the connection to it, but a scope that
    /// waits for a full state only with its own state.
    mutating func delivered(_ name: String, version: Int, isState: Bool, eventID: String?) {
        if let index = members.firstIndex(where: { $0.name == name }) {
            members[index].version = version
            if isState, eventID != nil { members[index].start = .lastEventID }
        }
        guard let eventID, !eventID.isEmpty else { return }
        lastEventID = eventID
        for index in members.indices where carried.contains(members[index].name) {
            if case .after = members[index].start { members[index].start = .lastEventID }
        }
    }

    /// The `deleted` event of `name`: it left the stream (which goes on for the others).
    mutating func deleted(_ name: String) {
        members.removeAll { $0.name == name }
        carried.remove(name)
    }

    /// How the connection ended decides the next one; while suspended there is none (the ends are
    /// still taken in: a gap or a scope that needs its full state starts there at resume), unless
    /// the server stopped every scope.
    mutating func ended(_ end: End, lasted: Duration) -> Decision {
        let decision = judged(end, lasted: lasted)
        guard isSuspended else { return decision }
        if case .stop = decision { return decision }
        return .suspended
    }

    private mutating func judged(_ end: End, lasted: Duration) -> Decision {
        switch end {
        case .changed:
            return members.isEmpty ? .idle : .reconnectNow(refreshToken: false)
        case .stream(let end):
            return decide(connection.ended(end, lasted: lasted))
        case .scope(let name, .deleted), .scope(let name, .forbidden):
            // The server refused one scope when the stream opened: it stops, the others go on.
            members.removeAll { $0.name == name }
            return members.isEmpty ? .idle : .reconnectNow(refreshToken: false)
        case .scope(let name, let end):
            if let index = members.firstIndex(where: { $0.name == name }) {
                switch end {
                case .gap: members[index].start = .after(members[index].version)
                case .inconsistent, .dropped(needsFullState: true): members[index].start = .fullState
                default: break
                }
            }
            if case .dropped = end { return decide(connection.ended(.dropped(needsFullState: false), lasted: lasted)) }
            return decide(connection.ended(end, lasted: lasted))
        }
    }

    // MARK: - Suspension and the network

    /// The client is suspended: the connection it closes and any wait for one end here.
    mutating func suspend() {
        isSuspended = true
    }

    /// The client resumes: the next connection is made at once, from where each scope was, and the
    /// backoff starts over.
    mutating func resume() {
        guard isSuspended else { return }
        isSuspended = false
        connection.startOver()
    }

    /// The device's network came back. True when a backoff is being waited out (or the connection
    /// after one is being tried): that wait ends now, and the backoff starts over.
    mutating func networkBecameAvailable() -> Bool {
        guard !isSuspended, !members.isEmpty, case .reconnecting(let attempt) = connection.status, attempt > 0 else {
            return false
        }
        connection.startOver()
        return true
    }

    private func decide(_ decision: StreamConnection.Decision) -> Decision {
        switch decision {
        case .reconnectNow(let refreshToken): .reconnectNow(refreshToken: refreshToken)
        case .backOff(let attempt, let refreshToken): .backOff(attempt: attempt, refreshToken: refreshToken)
        case .stop(let reason): .stop(reason)
        }
    }
}

extension SharedStreamConnection.End {
    /// The end a shared stream's opening status means, nil for `200`; `scope` is the problem's
    /// `"scope"` member, when it has one.
    init?(openingStatus status: Int, scope: String?) {
        switch (status, scope) {
        case (200, _): return nil
        case (401, _): self = .stream(.unauthorized)
        case (404, let name?): self = .scope(name, .deleted)
        case (403, let name?), (400, let name?):
            self = .scope(name, .forbidden("the server refuses this client scope \(name) (\(status))"))
        case (403, nil): self = .stream(.forbidden("the server refuses this client the event stream"))
        default: self = .stream(.dropped(needsFullState: false))
        }
    }
}
