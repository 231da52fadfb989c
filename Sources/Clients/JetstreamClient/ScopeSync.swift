import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

/// One scope kept in sync with the gateway, made by ``Client/fetch(_:createIfMissing:isolation:)``.
///
/// Local changes of the scope are applied at once (the app sees them), sent in order as atomic
/// change sets with fixed `Idempotency-Key`s, and kept until the stream confirms them; remote change
/// sets arrive through the scope's observers, one batch per event, on the actor the sync was
/// fetched on. A set the server refuses is rolled back and reported to ``onRejected(_:)``.
///
/// ```swift
/// let sync = try await client.fetch(scope)
/// sync.onRejected { rejection in showError(rejection.reasons) }
/// sync.status          // .live
/// sync.pendingCount    // local sets not yet confirmed
/// sync.presence.set(["x": 10, "y": 20])
/// await sync.stop()
/// ```
///
/// The server's schema may change under a running sync (the server restarted with another one; a
/// stream resumed across the change gets `event: reset`). Before it applies a `reset` or `snapshot`
/// the sync reads `GET /v1/schema` again (`If-None-Match` with the last `ETag`; `304` means
/// unchanged) and checks the model classes as ``Client/fetch(_:createIfMissing:isolation:)`` did.
/// When they still fit, the state is applied under the new schema and the sync stays live; when
/// they do not, the state is not applied, the sync stops following the scope and ``status`` turns
/// `.stopped(reason: .schemaMismatch(lines))`, one line per difference — the scope keeps its last
/// state. The app can then update, or fetch again with classes that fit.
///
/// A handle: fetching the same `Scope` twice from one ``Client`` gives two handles on one copy (one
/// engine, one place on the client's shared event stream); each handle's ``stop()`` removes its own
/// handlers, and the last one stops the copy. The same scope name fetched into another `Scope`
/// object is another copy, on the same place of the stream.
///
/// Every member is used on the fetching actor: the type is `Sendable` so that its tasks can hop
/// to that actor, and it only touches its state there.
public final class ScopeSync: @unchecked Sendable {
    public enum Status: Sendable, Equatable {
        case connecting
        case live
        /// The stream is down; `attempt` counts the tries since it was last live.
        case reconnecting(attempt: Int)
        /// The client is suspended (``Client/suspend()``): no stream, no reconnection, nothing
        /// sent; local changes are kept and go at ``Client/resume()``.
        case suspended
        case stopped(reason: StopReason)
    }

    public enum StopReason: Sendable, Equatable {
        /// ``stop()`` was called.
        case requested
        /// The scope was deleted on the server.
        case deleted
        /// The server refuses this client the scope (`403`).
        case forbidden(String)
        /// The server's schema changed (it restarted with another one) and the model classes no
        /// longer fit it: one line per difference, as ``ClientError/schemaMismatch(_:)``. The
        /// `reset` that brought the change is not applied: the scope keeps its last state, and
        /// local changes not yet sent stay in it unsent.
        case schemaMismatch([String])
    }

    let replica: ScopeReplica
    private var isClosed = false

    init(replica: ScopeReplica) {
        self.replica = replica
        replica.handles += 1
    }

    private var owner: ScopeReplica.Owner { ObjectIdentifier(self) }

    /// The scope this sync keeps (the one the first fetch of its name was given).
    public var scope: Scope { replica.scope }

    public var status: Status { isClosed ? .stopped(reason: .requested) : replica.status }

    /// Local change sets not yet confirmed by the stream.
    public var pendingCount: Int { replica.engine.pending.count }

    /// The server version the scope's state is based on.
    public var version: Int { replica.engine.version }

    /// Returns once every local change made so far is in the client's storage (``ClientStorage``):
    /// from then on it survives the app being killed, and is sent by a later fetch if not before.
    ///
    /// - Throws: ``ClientError/storage(_:)`` when a write failed (the disk is full, say);
    ///   `.invalidState` when the client has no storage.
    public func saved(isolation: isolated (any Actor) = #isolation) async throws(ClientError) {
        try await replica.saved(isolation: replica.actor)
    }

    /// What was wrong with the scope's stored copy when it was opened (a damaged file, moved aside;
    /// the scope then started afresh from the server), and storage failures since. Empty when all
    /// is well or there is no storage.
    public var storageProblems: [String] { replica.storageProblems }

    /// The time this copy's actor spent on each stream event so far (the benchmark reads it).
    @_spi(Benchmarks) public var eventTiming: EventTiming { replica.eventTiming }

    /// Who else is in the scope, and what this client shows them (``Presence``).
    public var presence: Presence { Presence(replica: replica, owner: owner) }

    /// Calls `handler` for every change set the server refused (or the schema refused locally),
    /// after its effect left the scope.
    public func onRejected(_ handler: @escaping (Rejection) -> Void) {
        guard !isClosed else { return }
        replica.rejectionHandlers.append((owner, handler))
    }

    /// Calls `handler` with every new ``status``.
    public func onStatusChange(_ handler: @escaping (Status) -> Void) {
        guard !isClosed else { return }
        replica.statusHandlers.append((owner, handler))
    }

    /// Stops this handle: its handlers go. The last handle of the scope stops following it and
    /// sending its changes, re-opens the client's shared stream without it and withdraws this
    /// client's presence there. Local sets not yet sent are dropped — unless the client has
    /// storage (``ClientStorage``): then they stay stored, with the whole copy, and the next fetch
    /// of the scope sends them.
    public func stop(isolation: isolated (any Actor) = #isolation) async {
        guard !isClosed else { return }
        isClosed = true
        await replica.release(owner, isolation: replica.actor)
    }

    // MARK: - Server methods

    /// Calls the server method `method` (`POST …/methods/{method}`, docs/methods.md) with `args`,
    /// after every local change made before it, and returns the server's answer.
    ///
    /// `stub` (optional) runs at once on the scope, on this actor: its edits show immediately, as
    /// local changes do (latency compensation), but they are the call's, not a change set of their
    /// own. They are replaced by the server's change set when its echo arrives (or removed when the
    /// method changed nothing), and rolled back on a refusal, which also reaches ``onRejected(_:)``.
    /// The call goes with a fixed `Idempotency-Key`, resent unchanged after a network error or a
    /// `5xx` like a change set; with storage it survives a restart as a pending entry.
    ///
    /// ```swift
    /// let answer = try await sync.call("arrange", args: ["columns": 3]) { scope in
    ///     for (index, shape) in canvas.shapes.enumerated() { shape.x = Float(20 + index % 3 * 120) }
    /// }
    /// answer.result   // {"moved": 4, "columns": 3}
    /// ```
    ///
    /// - Throws: ``ClientError/refused(status:detail:)`` for a refusal (`404 unknown-method`,
    ///   `422 method-rejected` or `invalid-change-set`, `502 method-failed`, `504 method-timeout`),
    ///   `.invalidState` when the sync stopped.
    @discardableResult
    public func call(
        _ method: String, args: JSONValue = .null, isolation: isolated (any Actor) = #isolation,
        stub: ((Scope) -> Void)? = nil
    ) async throws(ClientError) -> MethodAnswer {
        try await replica.call(method, args: args, stub: stub)
    }

    // MARK: - Undo and restore

    /// How many of this client's own accepted change sets ``undo(isolation:)`` may still try.
    public var undoableCount: Int { replica.undoableCount }

    /// Reverts this client's most recent own change set that can still be reverted.
    ///
    /// First waits until every local change made so far is answered, then asks
    /// `POST …/changesets/{V}/revert` for the most recent own version V (the versions come from
    /// the answers to this sync's POSTs — change sets and restores, never an undo's revert, so
    /// undo twice reverts two different sets). A `409 revert-conflict` (a later set touched the
    /// same properties) or a revert that changes nothing passes V over and tries the next older
    /// one; a V the server no longer keeps forgets it and every older one. The revert shows in
    /// the scope at once when it is the next version (else with its event).
    ///
    /// ```swift
    /// shape.x = 40
    /// let undone = try await sync.undo()   // shape.x is back; undone?.revertOf is that set's version
    /// ```
    ///
    /// - Returns: what was undone, or nil when nothing was left to undo.
    /// - Throws: ``ClientError`` when the server cannot be asked or refuses otherwise; V stays a
    ///   candidate, and the next undo sends the same `Idempotency-Key` (`<clientID>:undo:<V>`), so a
    ///   revert is never applied twice.
    public func undo(isolation: isolated (any Actor) = #isolation) async throws(ClientError) -> UndoResult? {
        try await replica.undo()
    }

    /// Sets the scope back to its state at `version` with `POST …/restore`: one new change set of
    /// this client (so ``undo(isolation:)`` can revert it), shown at once when it is the next version.
    ///
    /// - Returns: the new version, or nil when the scope already was in that state.
    /// - Throws: ``ClientError``: `.notFound` for a version ahead of the scope, `.refused(410, …)`
    ///   for one older than the retained history.
    public func restore(
        toVersion version: Int, isolation: isolated (any Actor) = #isolation
    ) async throws(ClientError) -> Int? {
        try await replica.restore(toVersion: version)
    }
}
