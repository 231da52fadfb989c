/// What each scope name is on this node, and every way into the engine's scope table.
///
/// A name is hosted (a live handle, at its committed version), being deleted here (this node's
/// delete took its handle out and waits for the store), or a tombstone at the last version of a
/// deleted scope; it may be hosted and carry a tombstone at once (a later scope of the name, past
/// its tombstone, or a creation that finished while a delete was in flight).
///
/// Copies of a scope read from the store (a shared store's follower), creations, deletes made here
/// and deletions made elsewhere cross: each is a transition, made under the engine's one lock of
/// the directory, so a copy read before a delete always meets that delete's tombstone. A
/// transition changes the directory and returns the ``Action``s the engine applies afterwards,
/// outside the lock and in order: they take the handles' own locks. Transitions read a hosted
/// handle's committed version when they compare it (the handle's lock nests inside the
/// directory's, never the other way round). `ScopeDirectoryTests` lays out the rules.
struct ScopeDirectory {
    /// What a deletion leaves of a name.
    enum Tombstone: Equatable {
        /// This node's delete is being made durable: no copy of the scope may be hosted, whatever
        /// version it was read at. A creation is hosted (the store accepted it: a later scope).
        case deleting
        /// The last version of a deleted scope: a copy read at or below it is of that scope.
        case at(Int)

        /// Whether a copy of the name read at `version` is of the deleted scope.
        func covers(_ version: Int) -> Bool {
            switch self {
            case .deleting: true
            case .at(let last): version <= last
            }
        }
    }

    /// What the engine does once the directory has changed.
    enum Action: Equatable {
        /// A handle replaced by another of its scope: it takes no more writes and its subscribers
        /// end without a final event, so they resume on the live one (with `reset` there when it
        /// cannot continue their stream).
        case retire(ScopeHandle)
        /// A handle of a deleted scope: it takes no more writes.
        case markDeleted(ScopeHandle)
        /// The subscribers of a deleted scope's handle end with `deleted` at `version` (or at the
        /// handle's committed version, when later).
        case endSubscribers(ScopeHandle, deletedAt: Int)
        /// A hosted handle of a scope deleted since: marked deleted and its subscribers ended, as
        /// the two actions above, in one step of its lock.
        case evict(ScopeHandle, deletedAt: Int)

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.retire(let a), .retire(let b)), (.markDeleted(let a), .markDeleted(let b)): a === b
            case (.endSubscribers(let a, let x), .endSubscribers(let b, let y)),
                (.evict(let a, let x), .evict(let b, let y)):
                a === b && x == y
            default: false
            }
        }
    }

    /// A transition's result: the handle live for the name afterwards (nil: none) and the actions.
    struct Outcome: Equatable {
        var live: ScopeHandle?
        var actions: [Action] = []

        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            lhs.live === rhs.live && lhs.actions == rhs.actions
        }
    }

    /// The live handles by name.
    private(set) var hosted: [String: ScopeHandle] = [:]
    private(set) var tombstones: [String: Tombstone] = [:]

    /// The live handle of `name`.
    subscript(name: String) -> ScopeHandle? { hosted[name] }

    /// Whether a copy of `name` read from the store at `version` is of a scope deleted since (or
    /// being deleted here): such a copy is never hosted.
    func isDeleted(_ name: String, readAt version: Int) -> Bool {
        tombstones[name]?.covers(version) ?? false
    }

    // MARK: Hosting

    /// The scopes loaded at start-up, before anything else is hosted or deleted.
    mutating func recovered(_ handles: [ScopeHandle]) -> [Action] {
        var actions: [Action] = []
        for handle in handles {
            if let replaced = hosted.updateValue(handle, forKey: handle.name), replaced !== handle {
                actions.append(.retire(replaced))
            }
        }
        return actions
    }

    /// The handle of a scope this node has just created in the store. The store's notice of the
    /// creation may have reached the follower first: its copy is kept when it is as far (it may
    /// have taken writes from elsewhere), and replaced (retired) when behind. When the new scope
    /// was even deleted since, nothing is hosted and the handle takes no writes. A delete in
    /// flight here is one of an earlier scope of the name (the store accepted this creation after
    /// it), or of that copy, which the delete then evicts: the handle is hosted.
    mutating func created(_ handle: ScopeHandle) -> Outcome {
        let existing = hosted[handle.name]
        if let existing, existing.version >= handle.version { return Outcome(live: existing) }
        if case .at(let last) = tombstones[handle.name], handle.version <= last {
            return Outcome(live: nil, actions: [.markDeleted(handle)])
        }
        hosted[handle.name] = handle
        return Outcome(live: handle, actions: existing.map { [.retire($0)] } ?? [])
    }

    /// A copy of a scope, restored from the store as read at version `read` (a follower's load or
    /// reload, or ``ScopeEngine/adopt(_:)``). It is dropped when the name's tombstone covers it:
    /// the copy was read before a delete that has run since, or runs now. A live handle is kept
    /// unless `replacing`, and even then when it is ahead of the copy (it committed meanwhile):
    /// only a handle behind the store is replaced (retired).
    mutating func loaded(_ copy: ScopeHandle, readAt read: Int, replacing: Bool) -> Outcome {
        let existing = hosted[copy.name]
        if let existing, !replacing || existing.version > read { return Outcome(live: existing) }
        if isDeleted(copy.name, readAt: read) { return Outcome(live: nil) }
        hosted[copy.name] = copy
        guard let existing, existing !== copy else { return Outcome(live: copy) }
        return Outcome(live: copy, actions: [.retire(existing)])
    }

    // MARK: Deleting

    /// This node deletes `name`: the live handle is taken out (nil when there is none) and marked
    /// deleted, and the name is being deleted until the store answers (``deleteCommitted``,
    /// ``deleteFoundGone`` or ``deleteFailed`` with the handle taken). Handle and tombstone change
    /// together, so a copy hosted concurrently meets the tombstone, and a handle replaced
    /// concurrently is not the one deleted.
    mutating func deleteBegan(_ name: String) -> (taken: ScopeHandle, actions: [Action])? {
        guard let live = hosted.removeValue(forKey: name) else { return nil }
        tombstones[name] = .deleting
        return (live, [.markDeleted(live)])
    }

    /// The store made the delete durable at `version`: the taken handle's subscribers end with
    /// `deleted`. A copy of the scope hosted while the delete was in flight (a creation finishing
    /// after a follower loaded it) is evicted too; a later scope of the name continues after the
    /// tombstone and stays.
    mutating func deleteCommitted(_ name: String, version: Int, taken: ScopeHandle) -> [Action] {
        tombstones[name] = .at(version)
        var actions: [Action] = [.endSubscribers(taken, deletedAt: version)]
        if let live = hosted[name], live.version <= version {
            hosted[name] = nil
            actions.append(.evict(live, deletedAt: version))
        }
        return actions
    }

    /// The store no longer had the scope (another writer deleted it meanwhile): it is gone here
    /// too, at the taken handle's version.
    mutating func deleteFoundGone(_ name: String, taken: ScopeHandle) -> [Action] {
        tombstones[name] = .at(taken.version)
        return [.endSubscribers(taken, deletedAt: taken.version)]
    }

    /// The store refused the delete and still holds the scope: the tombstone goes and the taken
    /// handle is live again (the caller has let it take writes again first), unless a copy took
    /// the name meanwhile — that copy is as current, and the taken handle is retired so its
    /// subscribers resume on it.
    mutating func deleteFailed(_ name: String, taken: ScopeHandle) -> Outcome {
        tombstones[name] = nil
        if let copy = hosted[name] { return Outcome(live: copy, actions: [.retire(taken)]) }
        hosted[name] = taken
        return Outcome(live: taken)
    }

    /// Another node deleted the scope of which `handle` is a copy, at `version`: the tombstone
    /// rises to it (a delete in flight here stays in flight), and the handle leaves unless another
    /// took its place meanwhile.
    mutating func deletedElsewhere(_ name: String, version: Int, handle: ScopeHandle) -> [Action] {
        switch tombstones[name] {
        case .deleting: break
        case .at(let last): tombstones[name] = .at(max(last, version))
        case nil: tombstones[name] = .at(version)
        }
        guard hosted[name] === handle else { return [] }
        hosted[name] = nil
        return [.evict(handle, deletedAt: version)]
    }
}
