import Foundation
import JetstreamModel
import Store
import Synchronization

/// Why a stored scope could not be loaded; the engine refuses to start half-recovered.
public struct RecoveryError: Error, CustomStringConvertible {
    public let scope: String
    public let version: Int
    public let message: String

    public var description: String { "cannot recover scope '\(scope)' at version \(version): \(message)" }
}

extension ScopeEngine {
    /// Loads every stored scope: its latest snapshot, then the change sets logged after it,
    /// re-applied through the model core. Returns the number of scopes and change sets replayed.
    @discardableResult
    public func recover() async throws -> (scopes: Int, replayed: Int) {
        var loaded: [ScopeHandle] = []
        var replayed = 0
        try await store.recover { scope in
            loaded.append(try restore(scope))
            replayed += scope.tail.count
        }
        apply(directory.withLock { $0.recovered(loaded) })
        return (loaded.count, replayed)
    }

    /// Hosts a scope that was created or changed elsewhere (another node, through the shared
    /// store): its snapshot and log tail are loaded as at start-up. Replaces a live scope of the
    /// same name (its subscribers get `reset` when they resume) unless that one is ahead of the
    /// copy, which is then kept and returned. A copy of a scope deleted since it was read (or
    /// being deleted here) is not hosted: ``ScopeError/scopeNotFound(_:)``.
    @discardableResult
    public func adopt(_ scope: RecoveredScope) throws -> ScopeHandle {
        guard let live = host(try restore(scope), readAt: scope.info.version, replacing: true) else {
            throw ScopeError.scopeNotFound(scope.info.name)
        }
        return live
    }

    /// A handle no longer live for its name (replaced by a newer copy): it takes no more writes
    /// and its subscribers end without a final event, so they resume on the live handle (and
    /// get `reset` there when it cannot continue their stream).
    func retire(_ handle: ScopeHandle) {
        handle.runtime.withLock { runtime in
            runtime.deleted = true
            handle.subscribers.endAll(with: nil)
        }
    }

    /// A live handle for `scope`: the snapshot, then the tail replayed (the newest ones also
    /// kept in the resume buffer).
    func restore(_ scope: RecoveredScope) throws -> ScopeHandle {
        var recent = RecentChangeSets(capacity: configuration.resumeBufferSize)
        let state = try rebuild(scope) { record in
            recent.append(ScopeEvent(kind: .changeset, version: Int(record.version), payload: record.payload))
        }
        let handle = makeHandle(
            name: scope.info.name, state: state, oldestResumable: Int(scope.info.oldestResumableVersion))
        handle.runtime.withLock { $0.recent = recent }
        return handle
    }

    /// The state `scope` was read at: its snapshot, then its tail replayed (each record handed to
    /// `replayed` once applied).
    func rebuild(
        _ scope: RecoveredScope, replayed: (ChangeRecord) -> Void = { _ in }
    ) throws(RecoveryError) -> ScopeState {
        let name = scope.info.name
        func failure(_ version: Int64, _ message: String) -> RecoveryError {
            RecoveryError(scope: name, version: Int(version), message: message)
        }
        let snapshot: JSONValue
        do {
            snapshot = try JSONParser.parse(scope.snapshot)
        } catch {
            throw failure(scope.snapshotVersion, "snapshot is not JSON: \(error)")
        }
        guard let rootText = snapshot["rootUUID"]?.string, let rootUUID = UUID(wireString: rootText),
            let fragmentValues = snapshot["fragments"]?.array
        else { throw failure(scope.snapshotVersion, "snapshot lacks rootUUID or fragments") }
        var state: ScopeState
        do {
            let fragments = try fragmentValues.map { value throws(FragmentError) in try SyncFragment(json: value) }
            state = try ScopeState(
                importing: fragments, rootUUID: rootUUID, version: Int(scope.snapshotVersion), schema: schema)
        } catch {
            throw failure(scope.snapshotVersion, "snapshot does not load: \(error)")
        }
        for record in scope.tail {
            state = try replay(record, onto: state, scope: name)
            replayed(record)
        }
        return state
    }

    /// Applies a change set that is already durable (logged here before a restart, or committed by
    /// another node) through the model core, without limits: it was accepted once.
    func replay(_ record: ChangeRecord, onto state: ScopeState, scope name: String) throws(RecoveryError) -> ScopeState
    {
        func failure(_ message: String) -> RecoveryError {
            RecoveryError(scope: name, version: Int(record.version), message: message)
        }
        let payload: JSONValue
        do {
            payload = try JSONParser.parse(record.payload)
        } catch {
            throw failure("logged change set is not JSON: \(error)")
        }
        guard let fragments = payload["fragments"]?.array else { throw failure("logged change set has no fragments") }
        switch state.applying(ChangeSet(json: fragments), schema: schema, limits: .unlimited) {
        case .accepted(let applied) where applied.state.version == Int(record.version):
            return applied.state
        case .accepted(let applied):
            throw failure("replay produced version \(applied.state.version)")
        case .rejected(let replies):
            let reason = replies.compactMap(\.error).first.map { "\($0)" } ?? "rejected"
            throw failure("the schema no longer accepts it: \(reason)")
        }
    }
}
