import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

/// The copy of a scope in one `Scope` object that a ``Client`` keeps in sync, however many
/// ``ScopeSync`` handles share it:
/// the sync engine, the sender, undo, presence. Its events come from the client's
/// ``SharedEventStream``, which also sets its status.
///
/// Every member is used on the fetching actor (`actor`): the type is `Sendable` so that its tasks
/// and the shared stream can hop to that actor, and it only touches its state there.
final class ScopeReplica: @unchecked Sendable {
    typealias Owner = ObjectIdentifier

    let actor: any Actor
    let scope: Scope
    /// The scope's name and the `Scope` object's identity (readable from any actor).
    let name: String
    let scopeID: ObjectIdentifier
    let client: Client
    var engine: SyncEngine
    private(set) var status: ScopeSync.Status = .connecting
    /// What the shared stream last said of this scope: the status, unless the client is suspended.
    var streamState: ScopeSync.Status = .connecting
    /// Handlers by the handle that registered them (removed when that handle stops).
    var rejectionHandlers: [(owner: Owner, handler: (Rejection) -> Void)] = []
    var statusHandlers: [(owner: Owner, handler: (ScopeSync.Status) -> Void)] = []
    var presenceHandlers: [(owner: Owner, handler: ([PresenceMember]) -> Void)] = []
    /// Open handles; the last one to stop stops the replica.
    var handles = 0
    var cancelChangeHandler: (() -> Void)?
    var tasks: [Task<Void, Never>] = []
    let senderWakeups: AsyncStream<Void>
    let wakeSender: AsyncStream<Void>.Continuation
    var flushScheduled = false
    var sendRetry = SendRetry()
    /// The sender's backoff being waited out, cancelled to send at once (a resume, the network back).
    var sendBackoff: Task<Void, Never>?
    /// This sync's own accepted change sets that ``undo(isolation:)`` may revert.
    var undoHistory = UndoHistory()
    /// Undos and restores waiting for the local sets made before them to be answered.
    var answerWaiters: [CheckedContinuation<Void, Never>] = []
    /// The other clients present in the scope (fed by `presence` events).
    var roster: PresenceRoster
    /// This client's own presence: what it announces and how far the announcements got.
    var ownPresence = OwnPresence()
    let presenceWakeups: AsyncStream<Void>
    let wakePresence: AsyncStream<Void>.Continuation
    var presenceWaiters: [(generation: Int, waiter: CheckedContinuation<Result<Void, ClientError>, Never>)] = []

    /// The schema the app's model classes form: a `reset` checks them against the server's again.
    let modelSchema: Schema
    /// The `ETag` of the server's schema the sync has, sent as `If-None-Match` when it reads it again.
    var schemaTag: String?

    /// While a call's stub runs: the method its recorded edits belong to, and the key they got.
    var stubMethod: PendingMethod?
    var stubKey: String?
    /// Calls waiting for the server's answer, by key.
    var callWaiters: [String: CheckedContinuation<CallOutcome, Never>] = [:]
    /// The observers' actor's time per stream event (for the benchmark).
    var eventTiming = EventTiming()
    /// The scope's stored copy, when the client has storage (``ClientStorage``).
    var storage: ScopeStorage?
    /// What was wrong with the stored copy when it was opened, and storage failures since.
    var storageProblems: [String] = []
    /// The stored copy's rewrite, due a while after the confirmed state moved.
    var copyRewrite: Task<Void, Never>?
    /// The scope was deleted on the server: its stored copy goes at the end.
    var discardsStoredCopy = false

    init(
        scope: Scope, client: Client, schema: Client.ServedSchema, modelSchema: Schema, state: ScopeState,
        engine restored: SyncEngine? = nil, isolation: isolated any Actor
    ) {
        self.actor = isolation
        self.scope = scope
        self.name = scope.name
        self.scopeID = ObjectIdentifier(scope)
        self.client = client
        self.modelSchema = modelSchema
        self.schemaTag = schema.entityTag
        let clientID = client.configuration.clientID ?? UUID().wireString
        self.engine = restored ?? SyncEngine(state: state, schema: schema.schema, clientID: clientID)
        self.roster = PresenceRoster(ownClient: client.presenceID)
        (senderWakeups, wakeSender) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        (presenceWakeups, wakePresence) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: - Life cycle

    /// The local objects of a scope just created on the server (its root only) become the first
    /// pending change set; the scope keeps showing them.
    func queueLocalContent(_ local: ScopeState) throws(ClientError) {
        let fragments = SyncEngine.difference(
            from: engine.confirmed, to: local, among: Set(local.preOrderUUIDs()))
        guard !fragments.isEmpty else { return }
        switch engine.local(fragments, created: Self.now()) {
        case .failure(let rejection):
            throw ClientError.invalidState(
                "the local objects do not satisfy the server's schema: "
                    + Rejection(local: rejection.replies, fragments: fragments).reasons.joined(separator: "; "))
        case .success(let key):
            storeAdded(key: key)
        }
        scope.adoptState(engine.view)
    }

    /// Starts sending local changes; the client's shared stream brings the events.
    func start() {
        cancelChangeHandler = scope.onChanges { [unowned self] recorded in localChange(recorded) }
        scope.onFlushNeeded = { [weak self] in self?.scheduleFlush() }
        tasks.append(Task { await self.sendChanges(isolation: self.actor) })
        tasks.append(Task { await self.announcePresence(isolation: self.actor) })
        tasks.append(Task { await self.refreshPresence(isolation: self.actor) })
        wakeSender.yield()
    }

    /// A handle stopped: its handlers go; the last handle stops the replica, leaves the shared
    /// stream and withdraws this client's presence.
    func release(_ owner: Owner, isolation: isolated any Actor) async {
        for (handlerOwner, handler) in statusHandlers where handlerOwner == owner {
            handler(.stopped(reason: .requested))
        }
        rejectionHandlers.removeAll { $0.owner == owner }
        statusHandlers.removeAll { $0.owner == owner }
        presenceHandlers.removeAll { $0.owner == owner }
        handles -= 1
        guard handles == 0 else { return }
        // Stored, local writes not yet delivered become pending sets first, so they are kept.
        if storage != nil { scope.flush() }
        finish(.requested)
        await client.stream.remove(self)
        // After the announcer's last PUT, so that the DELETE is the server's last word.
        for task in tasks { await task.value }
        await leavePresence(isolation: isolation)
        await closeStorage()
    }

    func finish(_ reason: ScopeSync.StopReason) {
        guard !isStopped else { return }
        setStatus(.stopped(reason: reason))
        cancelChangeHandler?()
        cancelChangeHandler = nil
        scope.onFlushNeeded = nil
        wakeSender.finish()
        wakePresence.finish()
        for task in tasks { task.cancel() }
        wakeAnswerWaiters()
        failCalls()
        settlePresenceWaiters(upTo: .max, .failure(ClientError.invalidState("the sync of scope \(scope.name) stopped")))
        if !roster.members.isEmpty {
            roster.clear()
            notifyPresence()
        }
    }

    /// The shared stream stopped this scope (deleted, forbidden, or every scope stopped).
    func stop(_ reason: ScopeSync.StopReason, isolation: isolated any Actor) {
        if reason == .deleted { discardsStoredCopy = true }
        finish(reason)
    }

    var isStopped: Bool {
        if case .stopped = status { return true }
        return false
    }

    /// The shared stream's status for this scope (shown unless the client is suspended).
    func streamStatus(_ new: ScopeSync.Status, isolation: isolated any Actor) {
        streamState = new
        showStatus()
    }

    func setStatus(_ new: ScopeSync.Status) {
        guard status != new else { return }
        status = new
        for (_, handler) in statusHandlers { handler(new) }
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
        // A stub's edits are its call's entry, not a change set of their own.
        let method = stubMethod
        switch engine.local(recorded.fragments, created: Self.now(), method: method) {
        case .success(let key):
            if method != nil {
                stubMethod = nil
                stubKey = key
            }
            storeAdded(key: key)
            scope.adoptState(engine.view)
            wakeSender.yield()
        case .failure(let rejection):
            recorded.revert()
            scope.adoptState(engine.view)
            report(Rejection(local: rejection.replies, fragments: recorded.fragments))
        }
    }

    func report(_ rejection: Rejection) {
        for (_, handler) in rejectionHandlers { handler(rejection) }
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

extension ScopeReplica {
    /// Now as RFC 3339 with milliseconds (`2026-11-28T16:23:24.123Z`), as change sets' `at`.
    static func now() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }
}
