import JetstreamModel
import Logging
import Store
import Synchronization

extension ScopeEngine {
    /// Starts `subscriber` on the scope at `point`: the snapshot, the change sets after its resume
    /// point (exactly once, in order), or a reset; then every change set as it becomes durable.
    ///
    /// Ordering: the catch-up and the registration are handed to the scope's subscribers in one
    /// ``ScopeSubscribers/add(_:catchUp:)`` call while the scope's lock is held. A publication made
    /// before that point is in the catch-up; one made after reaches the subscriber after it. So
    /// nothing is lost or doubled, and catch-up always comes strictly before live events. When the
    /// resume point is older than the memory buffer, the store is read first (outside the lock)
    /// and joined to the buffer under it (``ScopeResume``).
    ///
    /// `registered` runs once the subscriber has its catch-up and is registered (or has heard
    /// why not): at once, or later when a copy behind the shared store catches up first. A
    /// subscriber of several scopes waits for it before the next scope, so its snapshots come in
    /// its order.
    ///
    /// ```swift
    /// engine.subscribe(recorder, to: handle, from: ResumePoint(lastEventID: "41"))
    /// ```
    public func subscribe(
        _ subscriber: any ScopeSubscriber, to handle: ScopeHandle, from point: ResumePoint,
        registered: (@Sendable () -> Void)? = nil
    ) {
        // A resume point ahead of this copy, on a shared store: another node served versions this
        // one has not read yet (their notice may still be on its way). They are read first, or the
        // subscriber would get a `reset` back to an older state.
        var aheadOfCopy = false
        if case .after(let version) = point, store is any SharedChangeLogStore {
            aheadOfCopy = version > handle.version
        }
        // A cold copy (ScopeEngine+ColdCopies.swift) catches up first: the subscriber starts from
        // the store's latest state rather than replaying what nobody here has read.
        if aheadOfCopy || (handle.lagsStore && handle.subscriberCount == 0) {
            Task {
                defer { registered?() }
                let caughtUp = await aheadOfCopy ? catchUpReading(handle.name) : currentReading(handle)
                guard caughtUp.read else {
                    // The store did not answer: this copy cannot serve the point exactly. The
                    // subscriber goes as every stream goes when the store stops answering: to
                    // reconnect (behind a proxy, to another node) and resume from its point.
                    subscriber.receive(Self.closingForOutage)
                    return subscriber.end()
                }
                guard let current = caughtUp.handle else {
                    // Deleted while it caught up: the subscriber hears it as every other does.
                    subscriber.receive(.deleted(name: handle.name, version: handle.version))
                    return subscriber.end()
                }
                register(subscriber, to: current, from: point)
            }
            return
        }
        register(subscriber, to: handle, from: point)
        registered?()
    }

    private func register(_ subscriber: any ScopeSubscriber, to handle: ScopeHandle, from point: ResumePoint) {
        var point = point
        // A copy read under the schema before this one cannot take change sets on top: reset.
        if case .after(let version) = point, let boundary = schemaBoundary(of: handle.name), version <= boundary {
            point = .unknown
        }
        var lagging = false
        let storeRead: Int? = handle.runtime.withLock { runtime in
            // Checked under the lock an unsubscription takes too: either that removal finds this
            // registration, or this finds the subscriber gone (it closed before its clean-up ran).
            if subscriber.hasLeft { return nil }
            // The follower leaves a copy behind only while it has no subscriber, deciding under
            // this lock: a note made before this registration is caught up here.
            lagging = runtime.announcedVersion > runtime.committed.version
            if runtime.deleted {
                subscriber.receive(.deleted(name: handle.name, version: runtime.committed.version))
                subscriber.end()
                return nil
            }
            if isDraining {
                subscriber.receive(.closing)
                subscriber.end()
                return nil
            }
            let committed = runtime.committed.version
            // After its catch-up, a subscriber hears who is here (one join per member).
            let joins = presenceJoins(of: handle, &runtime)
            switch ScopeResume.plan(
                point, committed: committed, oldestResumable: runtime.oldestResumable, recent: runtime.recent)
            {
            case .live:
                handle.subscribers.add(subscriber, catchUp: joins)
            case .buffered(let versions):
                handle.subscribers.add(
                    subscriber, catchUp: (runtime.recent.events(after: versions.lowerBound - 1) ?? []) + joins)
            case .state(let kind):
                handle.subscribers.add(subscriber, catchUp: [stateEvent(kind, handle, &runtime)] + joins)
            case .readStore(let version):
                return version
            }
            return nil
        }
        if let version = storeRead {
            catchUpFromStore(subscriber, on: handle, after: version, attemptsLeft: 3)
        }
        if lagging { Task { await catchUp(handle.name) } }
    }

    /// Ends `subscriber`'s subscription to the scope.
    public func unsubscribe(_ subscriber: any ScopeSubscriber, from handle: ScopeHandle) {
        handle.runtime.withLock { _ in handle.subscribers.remove(subscriber) }
    }

    /// The full state as a `snapshot` or `reset` event (with the scope's lock held; the encoding
    /// is cached, so only the first reader of a version pays for it).
    private func stateEvent(
        _ kind: ScopeEvent.Kind, _ handle: ScopeHandle, _ runtime: inout ScopeHandle.Runtime
    ) -> ScopeEvent {
        let state = runtime.encodedState(name: handle.name)
        return ScopeEvent(kind: kind, version: state.version, payload: state.json)
    }

    /// Reads the change sets after `version` that the memory buffer no longer holds, then joins
    /// them to the buffer and registers the subscriber; reads again if the buffer moved past the
    /// read meanwhile.
    private func catchUpFromStore(
        _ subscriber: any ScopeSubscriber, on handle: ScopeHandle, after version: Int, attemptsLeft: Int
    ) {
        let store = self.store
        let pageLimit = configuration.maxHistoryPage
        Task {
            var records: [ChangeRecord] = []
            var cursor = Int64(version)
            do {
                while true {
                    let page = try await store.changes(scope: handle.name, after: cursor, limit: pageLimit)
                    records.append(contentsOf: page.records)
                    guard let last = page.records.last, last.version < page.currentVersion else { break }
                    cursor = last.version
                }
            } catch {
                logger.warning("resume read failed", metadata: ["scope": "\(handle.name)", "error": "\(error)"])
            }
            let readAgain = handle.runtime.withLock { runtime in
                if runtime.deleted {
                    subscriber.receive(.deleted(name: handle.name, version: runtime.committed.version))
                    subscriber.end()
                    return false
                }
                // The drain may have begun while the store was read: it ended every member, and
                // this subscriber was not one yet.
                if isDraining {
                    subscriber.receive(.closing)
                    subscriber.end()
                    return false
                }
                let committed = runtime.committed.version
                // Durable in the store but not yet published here: they arrive live.
                let read = records.filter { $0.version <= committed }
                switch ScopeResume.join(
                    records: read, after: version, committed: committed, recent: runtime.recent,
                    attemptsLeft: attemptsLeft)
                {
                case .records(let tail):
                    let buffered = tail.flatMap { runtime.recent.events(after: $0.lowerBound - 1) } ?? []
                    let fromStore = read.map {
                        ScopeEvent(
                            kind: .changeset, version: Int($0.version), payload: servedPayload($0, of: handle.name))
                    }
                    handle.subscribers.add(
                        subscriber, catchUp: fromStore + buffered + presenceJoins(of: handle, &runtime))
                case .readAgain:
                    return true
                case .reset:
                    handle.subscribers.add(
                        subscriber,
                        catchUp: [stateEvent(.reset, handle, &runtime)] + presenceJoins(of: handle, &runtime)
                    )
                }
                return false
            }
            if readAgain { catchUpFromStore(subscriber, on: handle, after: version, attemptsLeft: attemptsLeft - 1) }
        }
    }
}
