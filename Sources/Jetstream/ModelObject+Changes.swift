extension ModelObject {
    /// The one path every property write takes: equality check, graph bookkeeping, collection
    /// callbacks, change recording, then change and tree notifications.
    func setValue<Value: PropertyValue>(_ newValue: Value, in slot: PropertySlot<Value>) {
        let oldValue = slot.value
        guard oldValue != newValue else { return }
        slot.value = newValue
        if slot.isSynced {
            scope?.stateMirror = nil
            let oldChildren = oldValue.referencedObjects
            let newChildren = newValue.referencedObjects
            if !oldChildren.isEmpty || !newChildren.isEmpty {
                updateChildren(key: slot.key, old: oldChildren, new: newChildren)
            }
        }
        if let changes = Value.elementChanges(from: oldValue, to: newValue) {
            notifyElementChanges(changes, key: slot.key)
        }
        if slot.isSynced {
            scope?.recordChange(of: self, key: slot.key, oldValue: oldValue)
        }
        didChange(key: slot.key)
    }

    private func notifyElementChanges(_ changes: ElementChanges, key: String) {
        for element in changes.removed {
            fire({ if case .collectionRemove(key) = $0.kind { true } else { false } }) { callback in
                if case .element(let call) = callback { call(element) }
            }
        }
        for element in changes.added {
            fire({ if case .collectionAdd(key) = $0.kind { true } else { false } }) { callback in
                if case .element(let call) = callback { call(element) }
            }
        }
    }

    /// Fires immediate observers and marks queued ones (this object's, and the tree observers of
    /// every ancestor) for the next flush.
    func didChange(key: String) {
        let changed: Set<String> = [key]
        fire({ $0.matchesChange(of: changed, queued: false) }) { callback in
            if case .plain(let call) = callback { call() }
        }
        pendingChangedKeys.insert(key)
        scope?.enqueueNotifications(of: self)
        markTreeChanged()
    }

    /// Marks this object and its ancestors as changed. An ancestor already marked was marked with
    /// its own ancestors, so the walk stops there.
    private func markTreeChanged() {
        var stack: [ModelObject] = [self]
        var visited: Set<ObjectIdentifier> = []
        while let object = stack.popLast() {
            guard visited.insert(ObjectIdentifier(object)).inserted else { continue }
            if object.pendingTreeChange && object !== self { continue }
            let wasMarked = object.pendingTreeChange
            object.pendingTreeChange = true
            object.scope?.enqueueNotifications(of: object)
            if !wasMarked {
                stack += object.parentRelationships.compactMap(\.parent)
            }
        }
    }

    /// Calls the callbacks of the live observations that `matches` selects; an observation cancelled
    /// by an earlier callback in the same round is skipped.
    func fire(_ matches: (Observation) -> Bool, _ invoke: (Observation.Callback) -> Void) {
        guard !observations.isEmpty else { return }
        let selected = observations.filter { $0.observer != nil && matches($0) }
        for observation in selected where observations.contains(where: { $0.id == observation.id }) {
            guard observation.observer != nil else { continue }
            invoke(observation.callback)
        }
    }

    /// Delivers this object's queued change and tree observations for one flush.
    func deliverQueuedNotifications() {
        let changedKeys = pendingChangedKeys
        let treeChanged = pendingTreeChange
        pendingChangedKeys = []
        pendingTreeChange = false
        if !changedKeys.isEmpty {
            fire({ $0.matchesChange(of: changedKeys, queued: true) }) { callback in
                if case .plain(let call) = callback { call() }
            }
        }
        if treeChanged {
            fire({ if case .treeChange = $0.kind { true } else { false } }) { callback in
                if case .plain(let call) = callback { call() }
            }
        }
    }

    var hasPendingNotifications: Bool { pendingTreeChange || !pendingChangedKeys.isEmpty }
}
