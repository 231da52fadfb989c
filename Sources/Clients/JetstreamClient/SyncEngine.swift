import Foundation
import JetstreamJSON
import JetstreamModel

/// A local change set on its way to the server (docs/sync-protocol.md, "The client's state").
struct PendingChangeSet: Sendable {
    enum Status: Sendable, Equatable {
        case queued
        case inFlight
        /// The server accepted it at this version; it stays until the stream reaches it.
        case accepted(version: Int)
    }

    /// The fixed `Idempotency-Key`: `<client id>:<sequence>`.
    let key: String
    let fragments: [SyncFragment]
    var status: Status
    /// When it was made (RFC 3339), sent as `Idempotency-Key-Created` on every attempt: a set sent
    /// again after the server's idempotency window is decided from the server's log, never
    /// applied twice. Nil when the caller gave no time (the engine itself reads no clock).
    var created: String? = nil
    /// A server method's call (``ScopeSync/call(_:args:isolation:stub:)``): sent to
    /// `POST …/methods/{name}` with `args`; `fragments` are then its stub's edits, shown until the
    /// server's change set replaces them. Nil for a change set.
    var method: PendingMethod? = nil
}

/// The method a pending entry calls, and its arguments.
struct PendingMethod: Sendable, Equatable {
    let name: String
    let args: JSONValue
}

/// What the typed scope has to do so that it shows the engine's view.
enum ViewUpdate: Sendable {
    /// Nothing visible changed.
    case none
    /// Apply these fragments (with `Scope.applySyncFragments`): one batch for the observers.
    case fragments([SyncFragment])
}

/// The sync algorithm over the model core's states, with no I/O and no clock: `confirmed` is the
/// server's state at `version`, `pending` the local change sets in creation order, and `view` the
/// state the application sees — `confirmed` with every pending set re-applied. Each step returns
/// the update that brings the typed scope from the previous view to the new one.
///
/// ```swift
/// var engine = SyncEngine(state: serverState, schema: schema, clientID: "c1")
/// guard case .success(let key) = engine.local(recorded.fragments) else { … }   // optimistic
/// let set = engine.nextToSend()!                                               // POST with set.key
/// engine.accepted(key: set.key, version: 42)
/// ```
struct SyncEngine: Sendable {
    /// The server's schema: changes only with a reset that comes under another one.
    private(set) var schema: Schema
    /// Counts the schema's changes: an event prepared under an earlier schema is applied again.
    private(set) var schemaGeneration = 0
    let clientID: String
    private(set) var confirmed: ScopeState
    private(set) var view: ScopeState
    private(set) var pending: [PendingChangeSet] = []
    private var sequence = 0
    /// UUIDs the pending sets changed in the current view: a rebase may change them back.
    private var pendingTouched: Set<UUID> = []
    /// Keys of pending sets the view does not show (they no longer apply over the confirmed state).
    private var hiddenKeys: Set<String> = []

    init(state: ScopeState, schema: Schema, clientID: String) {
        self.schema = schema
        self.clientID = clientID
        self.confirmed = state
        self.view = state
    }

    /// A sync resumed from storage (``StoredCopy``): the pending sets in their order, each queued
    /// again unless its acceptance was stored (one in flight at a crash is sent again with its key,
    /// and the server answers it once); keys go on after `sequence`. Sets accepted at or below the
    /// state's version are in it already.
    init(state: ScopeState, schema: Schema, clientID: String, sequence: Int, pending: [PendingChangeSet]) {
        self.init(state: state, schema: schema, clientID: clientID)
        self.sequence = sequence
        self.pending = pending.compactMap { set in
            var set = set
            switch set.status {
            case .accepted(let version) where version <= state.version: return nil
            case .accepted: break
            case .queued, .inFlight: set.status = .queued
            }
            return set
        }
        _ = rebuild(touched: [])
    }

    /// The server version the view is based on.
    var version: Int { confirmed.version }

    /// What the shared stream prepares the next event against.
    var confirmedBase: ConfirmedBase {
        ConfirmedBase(state: confirmed, schema: schema, schemaGeneration: schemaGeneration)
    }

    /// The sequence number of the last key made (`<clientID>:<sequence>`).
    var lastSequence: Int { sequence }

    /// L1: a local change set, checked against the view. On success the view includes it
    /// (the typed scope already shows it) and it is queued under a new key; otherwise the replies
    /// say why, and nothing changed.
    mutating func local(
        _ fragments: [SyncFragment], created: String? = nil, method: PendingMethod? = nil
    ) -> Result<String, LocalRejection> {
        if fragments.isEmpty, let method {
            // A method called without a stub (or one that changed nothing): nothing to show.
            sequence += 1
            let key = "\(clientID):\(sequence)"
            pending.append(
                PendingChangeSet(key: key, fragments: [], status: .queued, created: created, method: method))
            return .success(key)
        }
        // The client checks what it can know of the schema's write rules: `immutable`. A stub is
        // the server's method done ahead, which may act as the server: the server judges it.
        let author: ChangeAuthor = method == nil ? .localEdit : .server()
        switch view.applying(fragments, schema: schema, limits: .unlimited, author: author) {
        case .rejected(let replies):
            return .failure(LocalRejection(replies: replies))
        case .accepted(let applied):
            sequence += 1
            let key = "\(clientID):\(sequence)"
            pending.append(
                PendingChangeSet(key: key, fragments: fragments, status: .queued, created: created, method: method))
            view = applied.state.withVersion(confirmed.version)
            pendingTouched.formUnion(Self.touched(by: applied))
            return .success(key)
        }
    }

    /// L2: the first queued set when none is in flight, now marked in flight.
    mutating func nextToSend() -> PendingChangeSet? {
        guard !pending.contains(where: { $0.status == .inFlight }),
            let index = pending.firstIndex(where: { $0.status == .queued })
        else { return nil }
        pending[index].status = .inFlight
        return pending[index]
    }

    /// R6: back to the queue after a network error or a 5xx, to be sent again with its key.
    mutating func retry(key: String) {
        if let index = pending.firstIndex(where: { $0.key == key }), pending[index].status == .inFlight {
            pending[index].status = .queued
        }
    }

    /// R6: accepted at `version`; kept until the stream's confirmed state reaches it.
    mutating func accepted(key: String, version: Int) -> ViewUpdate {
        guard let index = pending.firstIndex(where: { $0.key == key }) else { return .none }
        pending[index].status = .accepted(version: version)
        guard version <= confirmed.version else { return .none }
        pending.remove(at: index)
        return rebuild(touched: [])
    }

    /// R6: refused by the server; its effect leaves the view.
    mutating func rejected(key: String) -> ViewUpdate {
        guard let index = pending.firstIndex(where: { $0.key == key }) else { return .none }
        pending.remove(at: index)
        return rebuild(touched: [])
    }

    enum EventOutcome: Sendable {
        /// Already applied (an event at or below `version`).
        case stale
        /// Ahead of `version + 1`: reconnect with `Last-Event-ID: version`.
        case gap
        case applied(ViewUpdate)
        /// The event does not apply to the confirmed state: the stream and this client disagree;
        /// reconnect from a full state.
        case inconsistent([FragmentReply])
    }

    /// E1: a `changeset` event of the server (a gap is R1, an inconsistent one R2).
    mutating func event(
        version: Int, fragments: [SyncFragment], removed: [UUID], idempotencyKey: String?
    ) -> EventOutcome {
        guard version > confirmed.version else { return .stale }
        guard version == confirmed.version + 1 else { return .gap }
        switch confirmed.applying(fragments, schema: schema, limits: .unlimited) {
        case .rejected(let replies):
            return .inconsistent(replies)
        case .accepted(let applied):
            confirmed = applied.state.withVersion(version)
        }
        return rebase(version: version, fragments: fragments, removed: removed, idempotencyKey: idempotencyKey)
    }

    /// E1 for an event prepared off the observers' actor: its new confirmed state is taken as it
    /// is when it was computed from this engine's confirmed state (the version before it) under
    /// this engine's schema; otherwise the event is applied here.
    mutating func event(_ prepared: PreparedChangeSet) -> EventOutcome {
        let version = prepared.version
        guard version > confirmed.version else { return .stale }
        guard version == confirmed.version + 1 else { return .gap }
        guard let validated = prepared.validated, prepared.schemaGeneration == schemaGeneration else {
            return event(
                version: version, fragments: prepared.fragments, removed: prepared.removed,
                idempotencyKey: prepared.idempotencyKey)
        }
        switch validated {
        case .refused(let replies):
            return .inconsistent(replies)
        case .applied(let state):
            confirmed = state
        }
        return rebase(
            version: version, fragments: prepared.fragments, removed: prepared.removed,
            idempotencyKey: prepared.idempotencyKey)
    }

    /// The view after `confirmed` took the event at `version`.
    private mutating func rebase(
        version: Int, fragments: [SyncFragment], removed: [UUID], idempotencyKey: String?
    ) -> EventOutcome {
        if pending.isEmpty {
            // The view is the confirmed state: the typed scope applies the event as it is.
            view = confirmed
            return .applied(.fragments(fragments))
        }
        if let first = pending.first, first.key == idempotencyKey, first.method == nil,
            !hiddenKeys.contains(first.key),
            !pending.dropFirst().contains(where: { set in
                if case .accepted(let acceptedVersion) = set.status { return acceptedVersion <= version }
                return false
            })
        {
            // The echo of the oldest pending set, which the view already shows applied on the
            // confirmed state the event followed: the model applies the server's normalised form of
            // the same set to the same state, so the confirmed state now is what the view was built
            // on plus that set, and the view stays as it is. A long queue confirmed in order (a
            // replay after going offline) costs one step per event, not a rebuild of the queue.
            pending.removeFirst()
            view = view.withVersion(confirmed.version)
            return .applied(.none)
        }
        pending.removeAll { set in
            if set.key == idempotencyKey { return true }
            if case .accepted(let acceptedVersion) = set.status { return acceptedVersion <= version }
            return false
        }
        return .applied(rebuild(touched: Set(fragments.map(\.uuid)).union(removed)))
    }

    /// R7: a `reset` (or snapshot). The confirmed state is replaced; every set not yet
    /// accepted at or below its version is sent again with its key. The typed scope takes the
    /// whole view (`view`), so no update is returned. `schema`, when given, is the server's schema
    /// from now on (the state came under it): the pending sets are re-applied under it, and one
    /// it refuses stays pending, invisible, until the server answers it.
    mutating func reset(to state: ScopeState, schema: Schema? = nil) {
        if let schema {
            self.schema = schema
            schemaGeneration += 1
        }
        confirmed = state
        pending.removeAll { set in
            if case .accepted(let acceptedVersion) = set.status { return acceptedVersion <= state.version }
            return false
        }
        for index in pending.indices where pending[index].status != .inFlight {
            pending[index].status = .queued
        }
        _ = rebuild(touched: [])
    }

    /// The view rebuilt from `confirmed` and the pending sets that still apply (a set that no
    /// longer applies stays pending, invisible, until the server answers it), and the fragments
    /// that turn the previous view into it: candidates are what the event touched and what the
    /// pending sets touched before and after.
    private mutating func rebuild(touched: Set<UUID>) -> ViewUpdate {
        let previous = view
        var next = confirmed
        var nowTouched: Set<UUID> = []
        hiddenKeys = []
        for set in pending where !set.fragments.isEmpty {
            if case .accepted(let applied) = next.applying(set.fragments, schema: schema, limits: .unlimited) {
                next = applied.state
                nowTouched.formUnion(Self.touched(by: applied))
            } else {
                hiddenKeys.insert(set.key)
            }
        }
        view = next.withVersion(confirmed.version)
        let candidates = touched.union(pendingTouched).union(nowTouched)
        pendingTouched = nowTouched
        let fragments = Self.difference(from: previous, to: view, among: candidates)
        return fragments.isEmpty ? .none : .fragments(fragments)
    }

    private static func touched(by applied: AppliedChangeSet) -> Set<UUID> {
        Set(applied.fragments.map(\.uuid)).union(applied.removed)
    }

    /// Fragments that turn `old` into `new` for the objects in `candidates` (the model's
    /// ``JetstreamModel/ScopeState/difference(to:among:)``, which the server's restore uses too).
    static func difference(from old: ScopeState, to new: ScopeState, among candidates: Set<UUID>) -> [SyncFragment] {
        old.difference(to: new, among: candidates)
    }
}

/// A local change set the schema refuses: one reply per fragment, as the server would give them.
struct LocalRejection: Error, Sendable {
    let replies: [FragmentReply]
}
