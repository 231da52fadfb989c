import JetstreamModel
import Logging
import Store
import Synchronization

extension ScopeEngine {
    /// Follows the other nodes of a shared store (``Store/SharedChangeLogStore``): every notice
    /// brings the scopes it names up to date from the log — versions committed elsewhere are
    /// published to this node's subscribers, scopes created elsewhere are loaded, scopes deleted
    /// elsewhere end their streams with `deleted` — and ``Store/ChangeNotice/everything`` compares
    /// every scope. Returns false when the store is not shared (nothing to follow).
    ///
    /// ```swift
    /// try await engine.recover()
    /// engine.followSharedStore()
    /// ```
    @discardableResult
    public func followSharedStore() -> Bool {
        guard let shared = store as? any SharedChangeLogStore else { return false }
        let follower = ScopeFollower(engine: self)
        shared.follow { notice in follower.enqueue(notice) }
        watchStoreOutages()
        return true
    }

    /// Brings the hosted scope `name` up to the shared log: reads the versions after the committed
    /// one and publishes them in order; reloads the scope when its log no longer reaches back (a
    /// truncated history, or a new incarnation of the name); drops it when the store no longer has
    /// it. Loads it when this node does not host it yet. Returns the handle now live, if any.
    @discardableResult
    func catchUp(_ name: String) async -> ScopeHandle? {
        await catchUpReading(name).handle
    }

    /// ``catchUp(_:)``, and whether the store answered: when it did not, the handle returned is
    /// the copy as it was (or nil for a scope this node could not load).
    func catchUpReading(_ name: String) async -> (handle: ScopeHandle?, read: Bool) {
        guard let handle = handle(named: name) else { return await loadReading(name) }
        var stalled = 0
        while stalled < 2 {
            let from = handle.version
            let page: ChangePage
            do throws(StoreError) {
                page = try await store.changes(scope: name, after: Int64(from), limit: 1000)
            } catch .historyTruncated {
                return await reloadReading(name, replacing: handle)
            } catch .scopeMissing {
                return (await confirmDeleted(name, handle: handle), true)
            } catch {
                logger.warning("catch-up failed", metadata: ["scope": "\(name)", "error": "\(error)"])
                return (handle, false)
            }
            // A record that does not apply, or a log that does not continue from our version (a
            // new incarnation of the name), makes no progress: twice, and the scope is reloaded.
            _ = acceptInOrder(page.records, to: handle)
            if handle.version >= Int(page.currentVersion) {
                // Every announcement up to the version read is met; one above it came meanwhile.
                handle.runtime.withLock { runtime in
                    runtime.announcedVersion = min(runtime.announcedVersion, Int(page.currentVersion))
                    if runtime.announcedVersion <= runtime.committed.version { runtime.announcedAt = nil }
                }
                return (handle, true)
            }
            stalled = handle.version == from ? stalled + 1 : 0
        }
        return await reloadReading(name, replacing: handle)
    }

    /// Loads a scope this node does not host (created elsewhere), and whether the store answered.
    private func loadReading(_ name: String) async -> (handle: ScopeHandle?, read: Bool) {
        do {
            guard let recovered = try await store.recoverScope(named: name) else { return (nil, true) }
            return (try adoptIfAbsent(recovered), true)
        } catch {
            logger.warning(
                "cannot load a scope created elsewhere", metadata: ["scope": "\(name)", "error": "\(error)"])
            return (nil, false)
        }
    }

    func reload(_ name: String, replacing handle: ScopeHandle) async -> ScopeHandle? {
        await reloadReading(name, replacing: handle).handle
    }

    /// ``reload(_:replacing:)``, and whether the store answered (when not: `handle`, as it was).
    func reloadReading(_ name: String, replacing handle: ScopeHandle) async -> (handle: ScopeHandle?, read: Bool) {
        do {
            guard let recovered = try await store.recoverScope(named: name) else {
                return (await confirmDeleted(name, handle: handle), true)
            }
            // A copy the tombstone refuses is of a scope this node deletes or has deleted: that
            // delete decides the handle's fate (it puts it back if the store refuses).
            guard !isDeleted(recovered),
                let reloaded = try host(restore(recovered), readAt: recovered.info.version, replacing: true)
            else { return (self.handle(named: name), true) }
            logger.info("scope reloaded from the shared store", metadata: ["scope": "\(name)"])
            return (reloaded, true)
        } catch {
            logger.warning("cannot reload a scope", metadata: ["scope": "\(name)", "error": "\(error)"])
            return (handle, false)
        }
    }

    private func confirmDeleted(_ name: String, handle: ScopeHandle) async -> ScopeHandle? {
        acceptDeleted(name, version: handle.version, handle: handle)
        return nil
    }

    /// A scope another node deleted: it leaves this node, its subscribers get `deleted` and end
    /// (``ScopeDirectory/deletedElsewhere(_:version:handle:)``).
    func acceptDeleted(_ name: String, version: Int, handle: ScopeHandle) {
        let actions = directory.withLock { $0.deletedElsewhere(name, version: version, handle: handle) }
        guard !actions.isEmpty else { return }
        apply(actions)
        logger.info("scope deleted elsewhere", metadata: ["scope": "\(name)", "version": "\(version)"])
    }

    /// Publishes `records` (versions committed elsewhere, oldest first) on `handle`; false at a
    /// gap or a record that does not apply (the caller then catches the scope up alone).
    func acceptInOrder(_ records: [ChangeRecord], to handle: ScopeHandle) -> Bool {
        for record in records {
            do {
                if case .gap = try acceptCommitted(record, to: handle) { return false }
            } catch {
                logger.error(
                    "a version committed elsewhere does not apply",
                    metadata: ["scope": "\(handle.name)", "error": "\(error)"])
                return false
            }
        }
        return true
    }

    /// Hosts `scope` unless a handle for its name is already live (created here meanwhile), or the
    /// copy read is of an incarnation deleted since (or being deleted here).
    func adoptIfAbsent(_ scope: RecoveredScope) throws -> ScopeHandle? {
        guard !isDeleted(scope) else { return nil }
        return try host(restore(scope), readAt: scope.info.version, replacing: false)
    }

    /// Makes `made` — restored from a copy of its scope read from the store at version `read` —
    /// the live handle for its name, unless that copy is of a scope deleted since or being
    /// deleted here (``ScopeDirectory/loaded(_:readAt:replacing:)``). Without `replacing`, a
    /// handle already live (created here meanwhile) is kept and returned; with it, the old handle
    /// is replaced unless ahead of the copy, and its subscribers end (they get `reset` when they
    /// resume).
    func host(_ made: ScopeHandle, readAt read: Int64, replacing: Bool) -> ScopeHandle? {
        let outcome = directory.withLock { $0.loaded(made, readAt: Int(read), replacing: replacing) }
        apply(outcome.actions)
        return outcome.live
    }

    /// Whether `scope`, as read from the store, is of a scope deleted since it was read (or being
    /// deleted here): checked before restoring a copy, to spare the work; ``host(_:readAt:replacing:)``
    /// checks again.
    func isDeleted(_ scope: RecoveredScope) -> Bool {
        directory.withLock { $0.isDeleted(scope.info.name, readAt: Int(scope.info.version)) }
    }
}

/// Turns a shared store's notices into catch-ups, one round at a time: notices arriving while a
/// round runs are merged (per scope, the highest version; ``Store/ChangeNotice/everything`` once),
/// so a burst of commits elsewhere costs one read per scope, not one per notice.
final class ScopeFollower: Sendable {
    /// The notices not yet caught up, merged.
    struct Pending {
        var versions: [String: ScopeVersion] = [:]
        var everything = false
        var since: ContinuousClock.Instant?
        var running = false

        /// Merges `notice` into what is pending: per scope the highest version, except that a
        /// deletion always replaces, and so does whatever follows a deletion (creations and
        /// deletions announce version 0, and a creation after a deletion must not be lost).
        mutating func record(_ notice: ChangeNotice) {
            switch notice {
            case .everything: everything = true
            case .changed(let entries):
                for entry in entries {
                    if let known = versions[entry.name], known.version >= entry.version, !entry.deleted,
                        !known.deleted
                    {
                        continue
                    }
                    versions[entry.name] = entry
                }
            }
        }
    }

    private let engine: ScopeEngine
    private let pending = Mutex(Pending())

    init(engine: ScopeEngine) { self.engine = engine }

    /// Called on the store's listener thread: records the notice, starts a round if none runs.
    /// A notice that only names copies already current (this node's own commits) or cold ones
    /// (noted here) needs no round: behind a proxy that is nearly every notice, and a round costs a
    /// task and a hop for each.
    func enqueue(_ notice: ChangeNotice) {
        if case .changed(let entries) = notice, entries.allSatisfy(engine.isSettledWithoutCatchUp) { return }
        let start = pending.withLock { pending -> Bool in
            pending.record(notice)
            pending.since = pending.since ?? .now
            guard !pending.running else { return false }
            pending.running = true
            return true
        }
        if start { Task { await run() } }
    }

    private func run() async {
        while true {
            let round = pending.withLock { pending -> Pending? in
                guard pending.everything || !pending.versions.isEmpty else {
                    pending.running = false
                    return nil
                }
                defer { pending = Pending(running: true) }
                return pending
            }
            guard let round else { return }
            let records = await runRound(round)
            if let since = round.since, records > 0 {
                engine.configuration.observer?.didCatchUp(records: records, lag: .now - since)
            }
        }
    }

    /// Returns how many scopes moved.
    private func runRound(_ round: Pending) async -> Int {
        var versions = round.versions
        if round.everything, let shared = engine.store as? any SharedChangeLogStore {
            // Every scope the store knows, current: it supersedes the notices of the round.
            do throws(StoreError) {
                for entry in try await shared.scopeVersions() { versions[entry.name] = entry }
            } catch {
                engine.logger.warning("cannot read the scopes' versions", metadata: ["error": "\(error)"])
                // Tried again with the next notice or poll.
            }
        }
        var moved = 0
        // Hosted scopes that moved elsewhere: all of them in one read; anything unusual
        // (created or deleted elsewhere, a gap, a long tail) is caught up alone afterwards.
        var behind: [String: Int64] = [:]
        var alone: [ScopeVersion] = []
        for entry in versions.values {
            let hosted = engine.handle(named: entry.name)
            // Creations and deletions announce version 0: either is compared with the store alone
            // (a hosted scope may have been deleted and created again, merged into one notice).
            if let hosted, !entry.deleted, entry.version > 0 {
                // A copy no client of this node uses is left behind, noted (ScopeEngine+ColdCopies.swift).
                if Int(entry.version) > hosted.version, !engine.leaveBehindIfCold(hosted, announced: Int(entry.version))
                {
                    behind[entry.name] = Int64(hosted.version)
                }
            } else if hosted != nil || !entry.deleted {
                alone.append(entry)
            }
        }
        if !behind.isEmpty, let shared = engine.store as? any SharedChangeLogStore {
            let limit = 256
            let pages = (try? await shared.changes(after: behind, limit: limit)) ?? [:]
            for (name, _) in behind {
                let records = pages[name] ?? []
                if let handle = engine.handle(named: name), records.count < limit,
                    engine.acceptInOrder(records, to: handle),
                    handle.version >= Int(versions[name]?.version ?? 0)
                {
                    moved += 1
                } else {
                    alone.append(ScopeVersion(name: name, version: versions[name]?.version ?? 0))
                }
            }
        }
        await withTaskGroup(of: Bool.self) { group in
            for entry in alone {
                let hosted = engine.handle(named: entry.name)
                if entry.deleted {
                    guard let hosted else { continue }
                    group.addTask { [engine] in
                        // A deletion is checked against the store: the name may live again. A read
                        // that fails proves nothing: the scope stays until the next poll.
                        let stored: ScopeInfo?
                        do {
                            stored = try await engine.store.scope(named: entry.name)
                        } catch {
                            engine.logger.warning(
                                "cannot confirm a deletion", metadata: ["scope": "\(entry.name)", "error": "\(error)"])
                            return false
                        }
                        if stored == nil {
                            engine.acceptDeleted(
                                entry.name, version: max(Int(entry.version), hosted.version), handle: hosted)
                        } else {
                            await engine.catchUp(entry.name)
                        }
                        return true
                    }
                } else {
                    group.addTask { [engine] in
                        await engine.catchUp(entry.name)
                        return true
                    }
                }
            }
            for await didMove in group where didMove { moved += 1 }
        }
        return moved
    }
}
