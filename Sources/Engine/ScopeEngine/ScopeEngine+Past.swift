import Foundation
import JetstreamModel
import Store
import Synchronization

/// The past of a scope, read from the store: the state at a version (the nearest snapshot at or
/// before it plus at most a snapshot interval of replay), the difference between two versions,
/// and restore, which writes a past state back as one more change set. Object history and revert
/// are in ScopeEngine+History.swift and ScopeEngine+Revert.swift.
extension ScopeEngine {
    /// The scope `handle` names as it was at `version`, encoded as `GET` encodes the current state.
    /// ``ScopeError/versionNotFound(scope:version:current:)`` when the scope has not reached it,
    /// ``ScopeError/versionGone(scope:version:oldest:current:)`` when it is older than what the
    /// store retains.
    ///
    /// ```swift
    /// let past = try await engine.state(of: handle, at: 12)   // past.version == 12
    /// ```
    public func state(of handle: ScopeHandle, at version: Int) async throws(ScopeError) -> EncodedState {
        // The current state from its cached encoding; a past one is never made to encode it.
        if version == handle.version {
            let current = handle.encodedState()
            if current.version == version { return current }
        }
        let state = try await pastState(of: handle, at: version)
        return EncodedState(version: version, json: ScopeEncoding.stateJSON(name: handle.name, state: state))
    }

    /// `{"from","to","fragments","removed"}`: one change set that turns the state at `from` into
    /// the state at `to` (adds for objects new since `from`, changes of the differing properties,
    /// `removed` for objects gone).
    public func difference(of handle: ScopeHandle, from: Int, to: Int) async throws(ScopeError) -> [UInt8] {
        let old = try await pastOrCurrentState(of: handle, at: from)
        let new = try await pastOrCurrentState(of: handle, at: to)
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw(#"{"from":\#(from),"to":\#(to),"fragments":["#)
        for (index, fragment) in old.difference(to: new).enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw(#"],"removed":["#)
        for (index, uuid) in old.objectsMissing(from: new).enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(uuid: uuid)
        }
        writer.writeRaw("]}")
        return writer.bytes
    }

    /// Brings the scope back to its state at `version` as one more change set: the difference
    /// from the staged state, made under the scope's lock (so nothing written meanwhile is lost
    /// or undone twice), validated, keyed and versioned like any change set, its event carrying
    /// `"restoredFrom"`. Nothing to change answers the current version and makes none.
    ///
    /// ```swift
    /// engine.restore(handle, to: 12, origin: ChangeOrigin(subject: "ada")) { outcome in … }
    /// ```
    public func restore(
        _ handle: ScopeHandle, to version: Int, ifMatch: VersionCondition? = nil, idempotency: IdempotencyKey? = nil,
        origin: ChangeOrigin = ChangeOrigin(), completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        Task {
            // A retry is answered from its key first: its target may have been pruned since.
            if let idempotency, await answeredFromStore(idempotency, of: handle, completion: completion) { return }
            let past: ScopeState
            do throws(ScopeError) {
                past = try await pastOrCurrentState(of: handle, at: version)
            } catch {
                return completion(.rejected(error))
            }
            var origin = origin
            origin.restoredFrom = version
            submit(
                Submission(.restore(past), origin: origin), to: handle, ifMatch: ifMatch, idempotency: idempotency,
                completion: completion)
        }
    }

    /// The state at `version`, the committed one without a store read.
    func pastOrCurrentState(of handle: ScopeHandle, at version: Int) async throws(ScopeError) -> ScopeState {
        let committed = handle.committedState
        if committed.version == version { return committed }
        return try await pastState(of: handle, at: version)
    }

    /// Rebuilds the state at `version` from the store: the nearest snapshot at or before it and
    /// the change sets after that snapshot up to it.
    func pastState(of handle: ScopeHandle, at version: Int) async throws(ScopeError) -> ScopeState {
        let name = handle.name
        // Readable exactly from the version `changesets?since=` resumes from (the store keeps at
        // least that much, and a snapshot at or before it).
        let (oldest, current) = handle.runtime.withLock { ($0.oldestResumable, $0.committed.version) }
        if version < oldest, version <= current {
            throw .versionGone(scope: name, version: version, oldest: oldest, current: current)
        }
        let read: RecoveredScope?
        do throws(StoreError) {
            read = try await store.scope(named: name, at: Int64(version))
        } catch .historyTruncated(_, _, let oldest) {
            throw .versionGone(scope: name, version: version, oldest: Int(oldest), current: handle.version)
        } catch {
            throw storeFailure(error)
        }
        guard let read else { throw .scopeNotFound(name) }
        guard version <= Int(read.info.version) else {
            throw .versionNotFound(scope: name, version: version, current: Int(read.info.version))
        }
        do {
            return try rebuild(read)
        } catch {
            throw storeFailure(.corrupt(path: "scope '\(name)'", message: "\(error)"))
        }
    }
}
