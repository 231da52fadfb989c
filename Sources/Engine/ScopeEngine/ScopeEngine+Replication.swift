import JetstreamModel
import Store
import Synchronization

/// What ``ScopeEngine/acceptCommitted(_:to:)`` did with a version committed elsewhere.
public enum CommittedElsewhere: Sendable, Equatable {
    /// It became the scope's committed version and went to its subscribers.
    case applied
    /// The scope already had it (our own write, or a duplicate notification).
    case known
    /// It does not follow the committed version: read the versions after `after` first.
    case gap(after: Int)
}

extension ScopeEngine {
    /// Accepts a change set that another node committed to the shared store: it is applied to the
    /// committed state exactly like a local commit (the same resume buffer, the same single
    /// publication to the subscribers), so subscribers of every node see the same stream.
    ///
    /// Versions must arrive in order; a duplicate is ignored and a gap is reported, so the caller
    /// (the store's notification listener) reads the missing records and offers them in order.
    /// Local change sets staged on a now-stale state will fail at the store (version conflict) and
    /// roll the staged state back, as any failed append does.
    ///
    /// ```swift
    /// for record in page.records { _ = try engine.acceptCommitted(record, to: handle) }
    /// ```
    public func acceptCommitted(_ record: ChangeRecord, to handle: ScopeHandle) throws -> CommittedElsewhere {
        let version = Int(record.version)
        return try handle.runtime.withLock { runtime throws -> CommittedElsewhere in
            let committed = runtime.committed.version
            if version <= committed { return .known }
            guard version == committed + 1 else { return .gap(after: committed) }
            // Our own append, read back from the shared log before its completion ran: it is
            // published now, with the state we staged, and stays the lineage's head.
            if let own = runtime.staged.first, own.state.version == version, own.payload == record.payload {
                runtime.didCommit(token: own.token)
                publish(
                    ScopeEvent(kind: .changeset, version: version, payload: record.payload), state: own.state,
                    of: handle, runtime: &runtime)
                return .applied
            }
            let (state, payload) = try replayed(record, onto: runtime.committed, scope: handle.name)
            publish(
                ScopeEvent(kind: .changeset, version: version, payload: payload), state: state, of: handle,
                runtime: &runtime)
            // The store's head is now a version we did not write: appends built on it carry no
            // parent token (nothing to check); ours staged on the older state fail at the store
            // and are no base for new ones.
            runtime.committedToken = 0
            runtime.supersedeStaged(upTo: version)
            return .applied
        }
    }
}
