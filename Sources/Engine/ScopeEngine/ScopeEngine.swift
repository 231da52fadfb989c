import Foundation
import JetstreamModel
import Logging
import Store
import Synchronization

/// Every live scope of this node, without HTTP: one writer per scope, readers on immutable
/// snapshots, each accepted change set encoded once and handed to the scope's subscribers once.
/// Scopes proceed independently; the store's commit thread batches their durable appends into
/// shared fsyncs.
///
/// ```swift
/// let engine = ScopeEngine(configuration: ScopeEngineConfiguration(schema: .demo), store: store, logger: logger)
/// try await engine.recover()
/// let canvas = try await engine.create(name: "canvas-1", rootClassName: "Canvas")
/// engine.submit(ChangeSet(json: fragments), to: canvas) { outcome in print(outcome) }
/// ```
public final class ScopeEngine: Sendable {
    public let configuration: ScopeEngineConfiguration
    let store: any ChangeLogStore
    let logger: Logger
    /// What each scope name is here: its live handle, a delete in flight, a tombstone. Every way
    /// into the scope table is one of its transitions, under this one lock; what they return is
    /// applied after it (``apply(_:)``).
    let directory = Mutex(ScopeDirectory())
    /// Expires presence members (ScopeEngine+Presence.swift).
    let presenceSweeper = PresenceSweeper()
    private let draining = Atomic<Bool>(false)
    /// Whether stored data is translated to the schema, and where each scope's schema began
    /// (SchemaEvolution/).
    let evolution = Mutex(SchemaEvolution())

    public init(configuration: ScopeEngineConfiguration, store: any ChangeLogStore, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
    }

    public var schema: Schema { configuration.schema }

    /// The live scope `name`, nil when there is none.
    public func handle(named name: String) -> ScopeHandle? {
        directory.withLock { $0[name] }
    }

    /// The live scope `name`, or ``ScopeError/invalidName(_:)`` / ``ScopeError/scopeNotFound(_:)``.
    public func existingHandle(_ name: String) throws(ScopeError) -> ScopeHandle {
        try ScopeName.validate(name)
        guard let handle = handle(named: name) else { throw .scopeNotFound(name) }
        return handle
    }

    /// The number of live scopes.
    public var scopeCount: Int { directory.withLock { $0.hosted.count } }

    /// One page of scopes in name order after `after`; `next` names the last one when more follow.
    public func list(
        after: String?, limit: Int, where visible: (String) -> Bool = { _ in true }
    ) -> (page: [ScopeHandle], next: String?) {
        let all = directory.withLock { $0.hosted }
        let names = all.keys.filter { name in (after.map { name > $0 } ?? true) && visible(name) }.sorted()
        let page = names.prefix(limit).compactMap { all[$0] }
        return (page, names.count > limit ? page.last?.name : nil)
    }

    /// Creates scope `name` with a root of `rootClassName` (the class the schema's scope rules give
    /// for the name) carrying `properties`; durable before it returns.
    public func create(
        name: String, rootClassName: String, rootUUID: UUID? = nil, properties: JSONObject = JSONObject()
    ) async throws(ScopeError) -> ScopeHandle {
        try ScopeName.validate(name)
        guard let expected = schema.rootClass(forScope: name) else { throw .noScopeRule(name) }
        guard rootClassName == expected.name else {
            throw .rootRejected(
                .error(
                    FragmentError(
                        .unknownClass,
                        "scopes named '\(name)' have a root of class \(expected.name), not \(rootClassName)")))
        }
        if handle(named: name) != nil { throw .scopeExists(name) }
        let initial: ScopeState
        do {
            initial = try ScopeState.create(
                rootUUID: rootUUID ?? UUID(), rootClass: expected, properties: properties, schema: schema,
                limits: configuration.limits)
        } catch {
            throw .rootRejected(.error(error))
        }
        let descriptor = ScopeDescriptor(name: name, rootClass: expected.name, rootUUID: initial.rootUUID.wireString)
        let version: Int64
        do {
            version = try await store.createScope(descriptor, snapshot: ScopeEncoding.snapshotJSON(state: initial))
        } catch .scopeExists {
            throw .scopeExists(name)
        } catch {
            throw storeFailure(error)
        }
        let state = initial.withVersion(Int(version))
        let handle = makeHandle(name: name, state: state, oldestResumable: state.version)
        logger.info("scope created", metadata: ["scope": "\(name)", "version": "\(version)"])
        return hostCreated(handle)
    }

    /// Makes the handle of a scope just created live, and returns the live one: a follower's copy
    /// as far, or the handle itself — not hosted and taking no writes when its scope was deleted
    /// since (``ScopeDirectory/created(_:)``).
    func hostCreated(_ handle: ScopeHandle) -> ScopeHandle {
        let outcome = directory.withLock { $0.created(handle) }
        apply(outcome.actions)
        return outcome.live ?? handle
    }

    /// Creates scope `name` with an empty root unless it exists (the demo scope at start-up).
    public func ensureScope(named name: String) async throws(ScopeError) {
        guard handle(named: name) == nil else { return }
        guard let rootClass = schema.rootClass(forScope: name) else { throw .noScopeRule(name) }
        do {
            _ = try await create(name: name, rootClassName: rootClass.name)
        } catch .scopeExists {
            return
        }
    }

    /// Deletes scope `name`: it disappears at once for new requests, change sets already accepted
    /// finish first, then its subscribers get a `deleted` event and end.
    public func delete(name: String) async throws(ScopeError) {
        try ScopeName.validate(name)
        // The handle leaves and the name is being deleted in one transition: a copy a follower
        // hosts concurrently is refused, and a handle replaced concurrently is not the one deleted.
        guard let began = directory.withLock({ $0.deleteBegan(name) }) else { throw .scopeNotFound(name) }
        let taken = began.taken
        apply(began.actions)
        let version: Int64
        do throws(StoreError) {
            version = try await store.deleteScope(named: name)
        } catch .scopeMissing {
            // Deleted by another writer of the store meanwhile: gone here too.
            apply(directory.withLock { $0.deleteFoundGone(name, taken: taken) })
            throw .scopeNotFound(name)
        } catch {
            // The store still holds the scope: so does the engine again, live for reads, writes
            // and its subscribers — or, when a copy took the name meanwhile (as current: the
            // store refused the delete), retired so its subscribers resume on that copy.
            taken.runtime.withLock { $0.deleted = false }
            apply(directory.withLock { $0.deleteFailed(name, taken: taken) }.actions)
            throw storeFailure(error)
        }
        // The subscribers end with `deleted`; a copy hosted while the delete was in flight goes too.
        apply(directory.withLock { $0.deleteCommitted(name, version: Int(version), taken: taken) })
        logger.info("scope deleted", metadata: ["scope": "\(name)", "version": "\(version)"])
    }

    /// Carries out what a directory transition returned, in order, outside the directory's lock.
    func apply(_ actions: [ScopeDirectory.Action]) {
        for action in actions {
            switch action {
            case .retire(let handle):
                retire(handle)
            case .markDeleted(let handle):
                handle.runtime.withLock { $0.deleted = true }
            case .endSubscribers(let handle, let version):
                handle.runtime.withLock { runtime in
                    _ = handle.subscribers.endAll(
                        with: .deleted(name: handle.name, version: max(version, runtime.committed.version)))
                }
            case .evict(let handle, let version):
                handle.runtime.withLock { runtime in
                    runtime.deleted = true
                    _ = handle.subscribers.endAll(
                        with: .deleted(name: handle.name, version: max(version, runtime.committed.version)))
                }
            }
        }
    }

    func makeHandle(name: String, state: ScopeState, oldestResumable: Int) -> ScopeHandle {
        ScopeHandle(
            name: name, state: state, oldestResumable: oldestResumable,
            resumeBufferSize: configuration.resumeBufferSize, subscribers: configuration.makeSubscribers())
    }

    func storeFailure(_ error: StoreError) -> ScopeError {
        logger.error("store failed", metadata: ["error": "\(error)"])
        return .store(error)
    }

    // MARK: Draining

    /// Whether the engine drains for shutdown.
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Starts draining: every subscriber gets `closing` and ends, and subscribers arriving from
    /// now on get the same at once. Writes in flight are not touched. Returns the number of
    /// subscribers ended (0 when already draining).
    @discardableResult
    public func beginDrain() -> Int {
        guard !draining.exchange(true, ordering: .acquiringAndReleasing) else { return 0 }
        var ended = 0
        for handle in directory.withLock({ Array($0.hosted.values) }) {
            // Under the scope's lock: a subscriber registering concurrently is either already a
            // member (and ended here) or sees the drain flag in `subscribe` (and ends at once).
            ended += handle.runtime.withLock { _ in handle.subscribers.endAll(with: .closing) }
        }
        logger.info("draining: subscribers ended", metadata: ["subscribers": "\(ended)"])
        return ended
    }

    /// `nil` when the engine can serve (not draining and the store answers a read), else why not.
    public func readinessProblem() async -> String? {
        if isDraining { return "the gateway is draining for shutdown" }
        if let reason = store.unavailability { return reason }
        if let conflict = nodeSchemaConflict { return conflict }
        // Bounded: a store that does not answer makes the node not ready, never a hanging probe.
        // The read itself is left to finish (or fail) on its own.
        let store = self.store
        let answer = OnceAnswer<String?>()
        return await withCheckedContinuation { continuation in
            answer.setWaiter(continuation)
            Task {
                do {
                    _ = try await store.listScopes(after: nil, limit: 1)
                    answer.settle(nil)
                } catch {
                    answer.settle("the store does not answer: \(error)")
                }
            }
            Task {
                try? await Task.sleep(for: Self.readinessBound)
                answer.settle("the store did not answer within \(Self.readinessBound)")
            }
        }
    }

    /// How long `/readyz` waits for the store's answer.
    static let readinessBound: Duration = .seconds(3)
}
