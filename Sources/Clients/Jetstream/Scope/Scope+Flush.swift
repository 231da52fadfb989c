extension Scope {
    /// Delivers everything queued: recorded changes go to ``onChanges(_:)`` as one change set, then
    /// queued observers (``ModelObject/observeChange(_:_:)``, ``ModelObject/observeTreeChange(_:_:)``)
    /// run once each. Changes that observers make are delivered in further rounds of the same flush.
    ///
    /// Linux has no run loop to wait for, so queued delivery happens at explicit points: here, at the
    /// end of ``modify(_:)``, ``modifyAtomically(_:)`` and ``applySyncFragments(_:)``, or when the
    /// owner answers ``onFlushNeeded`` (``ScopeHost`` does so on its actor). A flush started from an
    /// observer during a flush returns at once; the running flush picks the new work up. Inside
    /// ``modify(_:)`` a flush waits for the end of the batch.
    ///
    /// ```swift
    /// shape.x = 1
    /// shape.y = 2
    /// scope.flush()  // one change set with change Shape{x, y}; observeChange fires once
    /// ```
    public func flush() {
        guard !isFlushing, modifyDepth == 0 else { return }
        isFlushing = true
        flushRequested = false
        defer { isFlushing = false }
        for _ in 0..<Self.maximumFlushRounds {
            if let changeSet = takeChangeSet(isAtomic: false) {
                emit(changeSet)
            }
            let objects = notificationQueue
            notificationQueue = []
            queuedObjectIDs = []
            for object in objects {
                object.deliverQueuedNotifications()
            }
            if recorder.isEmpty && notificationQueue.isEmpty {
                return
            }
        }
        // Observers that keep changing each other: leave the rest for the next flush, do not spin.
        isFlushing = false
        requestFlush()
    }

    /// How many rounds one flush runs while observers keep making changes.
    static let maximumFlushRounds = 64

    /// Runs `body` and returns its changes as one change set (nil when nothing changed), after first
    /// flushing what was pending so it does not mix in. `onChanges` receives the set and queued
    /// observers run before this returns. A nested call joins the outer batch and returns nil.
    ///
    /// ```swift
    /// let changeSet = scope.modify {
    ///     shape.x = 10
    ///     canvas.shapes.append(shape)
    /// }
    /// ```
    @discardableResult
    public func modify(_ body: () throws -> Void) rethrows -> RecordedChangeSet? {
        try runBatch(isAtomic: false, body)
    }

    /// Like ``modify(_:)``, but the change set is marked atomic (the gateway applies it all or
    /// nothing); if `body` throws, its changes are reverted locally and never delivered.
    @discardableResult
    public func modifyAtomically(_ body: () throws -> Void) rethrows -> RecordedChangeSet? {
        try runBatch(isAtomic: true, body)
    }

    private func runBatch(isAtomic: Bool, _ body: () throws -> Void) rethrows -> RecordedChangeSet? {
        guard modifyDepth == 0 else {
            try body()
            return nil
        }
        flush()
        modifyDepth += 1
        do {
            try body()
        } catch {
            modifyDepth -= 1
            if isAtomic {
                takeChangeSet(isAtomic: true)?.revert()
            }
            flush()
            throw error
        }
        modifyDepth -= 1
        let changeSet = takeChangeSet(isAtomic: isAtomic)
        if let changeSet {
            emit(changeSet)
        }
        flush()
        return changeSet
    }

    func emit(_ changeSet: RecordedChangeSet) {
        for (_, handler) in changeHandlers {
            handler(changeSet)
        }
    }

    func enqueueNotifications(of object: ModelObject) {
        guard queuedObjectIDs.insert(ObjectIdentifier(object)).inserted else { return }
        notificationQueue.append(object)
        requestFlush()
    }

    func requestFlush() {
        guard !flushRequested, !isFlushing, modifyDepth == 0 else { return }
        flushRequested = true
        onFlushNeeded?()
    }
}
