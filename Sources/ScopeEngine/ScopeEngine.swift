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
    let scopes = Mutex<[String: ScopeHandle]>([:])
    /// Names deleted here or elsewhere, with their tombstone's version (`Int.max` while a local
    /// delete is being made durable): a copy of the scope read from a shared store before its
    /// deletion must not be loaded again afterwards, and nothing is loaded while it is deleted.
    /// Lock order: `scopes`, then `tombstones` (never the other way round).
    let tombstones = Mutex<[String: Int]>([:])
    private let draining = Atomic<Bool>(false)

    public init(configuration: ScopeEngineConfiguration, store: any ChangeLogStore, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
    }

    public var schema: Schema { configuration.schema }

    /// The live scope `name`, nil when there is none.
    public func handle(named name: String) -> ScopeHandle? {
        scopes.withLock { $0[name] }
    }

    /// The live scope `name`, or ``ScopeError/invalidName(_:)`` / ``ScopeError/scopeNotFound(_:)``.
    public func existingHandle(_ name: String) throws(ScopeError) -> ScopeHandle {
        try ScopeName.validate(name)
        guard let handle = handle(named: name) else { throw .scopeNotFound(name) }
        return handle
    }

    /// The number of live scopes.
    public var scopeCount: Int { scopes.withLock { $0.count } }

    /// One page of scopes in name order after `after`; `next` names the last one when more follow.
    public func list(
        after: String?, limit: Int, where visible: (String) -> Bool = { _ in true }
    ) -> (page: [ScopeHandle], next: String?) {
        let all = scopes.withLock { $0 }
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

    /// Makes the handle of a scope just created live, and returns the live one. The store's
    /// notice of the creation may have reached this node's follower first: its copy of the new
    /// scope is kept when it is already as far (it may have taken writes from elsewhere), and
    /// when this new scope was even deleted since, nothing is hosted (the handle answers writes
    /// with not-found). A delete still in flight here (`Int.max`) is one of an earlier scope of
    /// the name, or of that copy, which `delete(name:)` then evicts: the handle is hosted.
    func hostCreated(_ handle: ScopeHandle) -> ScopeHandle {
        let outcome = scopes.withLock { scopes -> (live: ScopeHandle?, replaced: ScopeHandle?) in
            let existing = scopes[handle.name]
            if let existing, existing.version >= handle.version { return (existing, nil) }
            let tombstone = tombstones.withLock { $0[handle.name] }
            if let tombstone, tombstone != Int.max, handle.version <= tombstone { return (nil, nil) }
            scopes[handle.name] = handle
            return (handle, existing)
        }
        if let replaced = outcome.replaced { retire(replaced) }
        guard let live = outcome.live else {
            handle.runtime.withLock { $0.deleted = true }
            return handle
        }
        return live
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
        // One critical section: a copy a follower hosts concurrently finds the tombstone, and a
        // handle replaced concurrently is not the one deleted.
        let taken = scopes.withLock { scopes -> ScopeHandle? in
            guard let live = scopes[name] else { return nil }
            tombstones.withLock { $0[name] = Int.max }
            scopes[name] = nil
            return live
        }
        guard let handle = taken else { throw .scopeNotFound(name) }
        handle.runtime.withLock { $0.deleted = true }
        let version: Int64
        do throws(StoreError) {
            version = try await store.deleteScope(named: name)
        } catch .scopeMissing {
            // Deleted by another writer of the store meanwhile: gone here too.
            tombstones.withLock { $0[name] = handle.version }
            handle.runtime.withLock { runtime in
                _ = handle.subscribers.endAll(with: .deleted(name: name, version: runtime.committed.version))
            }
            throw .scopeNotFound(name)
        } catch {
            // The store still holds the scope: so does the engine again, live for reads, writes
            // and its subscribers (unless a new scope took the name meanwhile, which the store
            // would have refused).
            handle.runtime.withLock { $0.deleted = false }
            let restored = scopes.withLock { scopes -> Bool in
                tombstones.withLock { _ = $0.removeValue(forKey: name) }
                guard scopes[name] == nil else { return false }
                scopes[name] = handle
                return true
            }
            // A copy hosted meanwhile is as current: this handle's subscribers resume on it.
            if !restored { retire(handle) }
            throw storeFailure(error)
        }
        tombstones.withLock { $0[name] = Int(version) }
        handle.runtime.withLock { _ in
            _ = handle.subscribers.endAll(with: .deleted(name: name, version: Int(version)))
        }
        // A copy of this scope hosted while the delete was in flight (a creation finishing
        // after a follower loaded it) goes too; a later scope of the name continues after the
        // tombstone and stays.
        if let live = self.handle(named: name), live.version <= Int(version) {
            acceptDeleted(name, version: Int(version), handle: live)
        }
        logger.info("scope deleted", metadata: ["scope": "\(name)", "version": "\(version)"])
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
        for handle in scopes.withLock({ Array($0.values) }) {
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
        do {
            _ = try await store.listScopes(after: nil, limit: 1)
            return nil
        } catch {
            return "the store does not answer: \(error)"
        }
    }
}
