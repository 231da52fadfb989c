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
/// await sync.stop()
/// ```
///
/// Every member is used on the fetching actor: the type is `Sendable` so that its tasks can hop
/// to that actor, and it only touches its state there.
public final class ScopeSync: @unchecked Sendable {
    public enum Status: Sendable, Equatable {
        case connecting
        case live
        /// The stream is down; `attempt` counts the tries since it was last live.
        case reconnecting(attempt: Int)
        case stopped(reason: StopReason)
    }

    public enum StopReason: Sendable, Equatable {
        /// ``stop()`` was called.
        case requested
        /// The scope was deleted on the server.
        case deleted
        /// The server refuses this client the scope (`403`).
        case forbidden(String)
    }

    let actor: any Actor
    let scope: Scope
    let client: Client
    var engine: SyncEngine
    public private(set) var status: Status = .connecting
    var rejectionHandlers: [(Rejection) -> Void] = []
    var statusHandlers: [(Status) -> Void] = []
    var cancelChangeHandler: (() -> Void)?
    var tasks: [Task<Void, Never>] = []
    let senderWakeups: AsyncStream<Void>
    let wakeSender: AsyncStream<Void>.Continuation
    var flushScheduled = false
    /// How the stream's connections went, and so what the next one does.
    var connection = StreamConnection()
    /// When the current stream connection last delivered a byte (heartbeats included).
    var lastStreamActivity = ContinuousClock.now
    var sendRetry = SendRetry()
    var token: String?
    /// This sync's own accepted change sets that ``undo(isolation:)`` may revert.
    var undoHistory = UndoHistory()
    /// Undos and restores waiting for the local sets made before them to be answered.
    var answerWaiters: [CheckedContinuation<Void, Never>] = []

    init(scope: Scope, client: Client, schema: Schema, state: ScopeState, isolation: isolated any Actor) {
        self.actor = isolation
        self.scope = scope
        self.client = client
        let clientID = client.configuration.clientID ?? UUID().wireString
        self.engine = SyncEngine(state: state, schema: schema, clientID: clientID)
        (senderWakeups, wakeSender) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Local change sets not yet confirmed by the stream.
    public var pendingCount: Int { engine.pending.count }

    /// The server version the scope's state is based on.
    public var version: Int { engine.version }

    /// Calls `handler` for every change set the server refused (or the schema refused locally),
    /// after its effect left the scope.
    public func onRejected(_ handler: @escaping (Rejection) -> Void) {
        rejectionHandlers.append(handler)
    }

    /// Calls `handler` with every new ``status``.
    public func onStatusChange(_ handler: @escaping (Status) -> Void) {
        statusHandlers.append(handler)
    }

    /// Stops following the scope and sending its changes; local sets not yet sent are dropped.
    public func stop(isolation: isolated (any Actor) = #isolation) async {
        finish(.requested)
        for task in tasks { await task.value }
    }

    // MARK: - Life cycle

    /// The local objects of a scope just created on the server (its root only) become the first
    /// pending change set; the scope keeps showing them.
    func queueLocalContent(_ local: ScopeState) throws(ClientError) {
        let fragments = SyncEngine.difference(
            from: engine.confirmed, to: local, among: Set(local.preOrderUUIDs()))
        guard !fragments.isEmpty else { return }
        if case .failure(let rejection) = engine.local(fragments) {
            throw ClientError.invalidState(
                "the local objects do not satisfy the server's schema: "
                    + Rejection(local: rejection.replies, fragments: fragments).reasons.joined(separator: "; "))
        }
        scope.adoptState(engine.view)
    }

    func start() {
        cancelChangeHandler = scope.onChanges { [unowned self] recorded in localChange(recorded) }
        scope.onFlushNeeded = { [weak self] in self?.scheduleFlush() }
        tasks.append(Task { await self.followStream(isolation: self.actor) })
        tasks.append(Task { await self.sendChanges(isolation: self.actor) })
        wakeSender.yield()
    }

    func finish(_ reason: StopReason) {
        guard !isStopped else { return }
        connection.stopped(reason)
        setStatus(connection.status)
        cancelChangeHandler?()
        cancelChangeHandler = nil
        scope.onFlushNeeded = nil
        wakeSender.finish()
        for task in tasks { task.cancel() }
        wakeAnswerWaiters()
    }

    var isStopped: Bool {
        if case .stopped = status { return true }
        return false
    }

    func setStatus(_ new: Status) {
        guard status != new else { return }
        status = new
        for handler in statusHandlers { handler(new) }
    }

    // MARK: - The scope

    /// Local writes are delivered at a flush; the scope asks for one when something is pending.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        Task { await self.flushScope(isolation: self.actor) }
    }

    private func flushScope(isolation: isolated any Actor) async {
        flushScheduled = false
        scope.flush()
    }

    /// L1: a recorded local change set becomes a pending set, or — when the schema refuses
    /// it — is reverted and reported.
    private func localChange(_ recorded: RecordedChangeSet) {
        guard !isStopped else { return }
        switch engine.local(recorded.fragments) {
        case .success:
            scope.adoptState(engine.view)
            wakeSender.yield()
        case .failure(let rejection):
            recorded.revert()
            scope.adoptState(engine.view)
            report(Rejection(local: rejection.replies, fragments: recorded.fragments))
        }
    }

    func report(_ rejection: Rejection) {
        for handler in rejectionHandlers { handler(rejection) }
    }

    /// Brings the typed scope to the engine's view: one application, so observers fire once.
    func show(_ update: ViewUpdate) {
        guard case .fragments(let fragments) = update else { return }
        do {
            try scope.applySyncFragments(fragments)
        } catch {
            // The scope and the engine disagree (they should not): take the whole view.
            showWholeView()
        }
        scope.adoptState(engine.view)
    }

    func showWholeView() {
        let view = engine.view
        try? scope.applyFullState(view.exportFragments(), rootUUID: view.rootUUID, version: view.version)
        scope.adoptState(view)
    }
}
