import JetstreamModel
import Store
import Synchronization

/// Cold copies: on a shared store every node hosts every scope, but behind a proxy that sends all
/// of a scope's requests to one node (consistent hashing on the name) the other nodes' copies of
/// a hot scope serve nobody. Reading and applying every version of it there costs each of them a
/// share of a core for nothing, so the follower only notes how far the store has moved a copy no
/// client of its node uses, and the copy catches up on its next use: a read, a write, a stream.
extension ScopeEngine {
    /// How long after its last write through this node a copy nobody follows here still counts
    /// as used (a scope written through two nodes stays followed on both).
    static let coldAfter: Duration = .seconds(2)

    /// Whether a notice's `entry` needs nothing read: its hosted copy already holds that version,
    /// or is cold and now notes it (``leaveBehindIfCold(_:announced:)``). No suspension, one lock:
    /// the follower asks on the store's listener thread. Creations and deletions (version 0, or
    /// `deleted`) and scopes not hosted always go to a round.
    func isSettledWithoutCatchUp(_ entry: ScopeVersion) -> Bool {
        guard !entry.deleted, entry.version > 0, let hosted = handle(named: entry.name) else { return false }
        if Int(entry.version) <= hosted.version { return true }
        // A version this node is committing itself is published by its own completion, which the
        // notice can overtake: noting it here would make the copy look behind for that moment
        // (and a stream opening then would take the catch-up path). The round looks later.
        guard hosted.runtime.withLock({ $0.staged.isEmpty }) else { return false }
        return leaveBehindIfCold(hosted, announced: Int(entry.version))
    }

    /// Notes that the shared store holds `announced` for the hosted scope of `handle`, and says
    /// whether the follower may leave the copy behind: no subscriber here, nothing staged or
    /// waiting to be judged again, no write through this node in the last ``coldAfter``.
    ///
    /// The note and the decision are made under the scope's lock, and a subscription registers
    /// under it too: either the follower sees the subscriber and catches up, or the subscription
    /// sees the note and catches up itself (``subscribe(_:to:from:)``).
    func leaveBehindIfCold(_ handle: ScopeHandle, announced version: Int) -> Bool {
        let now = ContinuousClock.now
        return handle.runtime.withLock { runtime in
            runtime.announcedVersion = max(runtime.announcedVersion, version)
            if runtime.announcedAt == nil { runtime.announcedAt = now }
            guard handle.subscribers.count == 0, runtime.staged.isEmpty, runtime.revalidations.isEmpty,
                !runtime.revalidationScheduled
            else { return false }
            if let last = runtime.lastStaged, now - last < Self.coldAfter { return false }
            return true
        }
    }

    /// `handle`, or the copy now live for its name, brought up to every version the shared store
    /// announced: at once when it has them (the common case, no suspension), else after a
    /// catch-up from the log — or, when nobody follows it here and it fell more than a snapshot
    /// interval behind, after a reload from the store's latest snapshot (cheaper than replaying
    /// the gap). Nil when the scope is gone.
    ///
    /// ```swift
    /// guard let handle = await engine.current(handle) else { throw ScopeError.scopeNotFound(name) }
    /// ```
    public func current(_ handle: ScopeHandle) async -> ScopeHandle? {
        await currentReading(handle).handle
    }

    /// ``current(_:)``, and whether the copy is known to be current: false when the store did not
    /// answer the read it needed (the handle returned is then the copy as it was).
    func currentReading(_ handle: ScopeHandle) async -> (handle: ScopeHandle?, read: Bool) {
        let (read, lag, followed, since) = handle.runtime.withLock { runtime in
            let read = runtime.committed.version
            return (read, runtime.announcedVersion - read, handle.subscribers.count > 0, runtime.announcedAt)
        }
        guard lag > 0 else { return (handle, true) }
        let current =
            if !followed, lag > configuration.snapshotInterval {
                await reloadReading(handle.name, replacing: handle)
            } else {
                await catchUpReading(handle.name)
            }
        // Counted as the follower's catch-ups are: one scope, late by the time it was left behind.
        if let since, current.read, let caughtUp = current.handle, caughtUp !== handle || caughtUp.version > read {
            configuration.observer?.didCatchUp(records: 1, lag: .now - since)
        }
        return current
    }
}
