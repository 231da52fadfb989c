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

    /// Fires immediate observers and marks the queued ones registered now (this object's change
    /// observers for `key`, and the tree observers of this object and every ancestor) for the next
    /// flush. Observations registered later do not see this change.
    func didChange(key: String) {
        let changed: Set<String> = [key]
        fire({ $0.matchesChange(of: changed, queued: false) }) { callback in
            if case .plain(let call) = callback { call() }
        }
        markPending { $0.matchesChange(of: changed, queued: true) }
        var stack: [ModelObject] = [self]
        var visited: Set<ObjectIdentifier> = []
        while let object = stack.popLast() {
            guard visited.insert(ObjectIdentifier(object)).inserted else { continue }
            object.markPending { if case .treeChange = $0.kind { true } else { false } }
            stack += object.parentRelationships.compactMap(\.parent)
        }
    }

    private func markPending(_ matches: (Observation) -> Bool) {
        var marked = false
        for observation in observations where observation.observer != nil && matches(observation) {
            pendingObservationIDs.insert(observation.id)
            marked = true
        }
        if marked {
            scope?.enqueueNotifications(of: self)
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

    /// Delivers this object's marked queued observations, each once, for one flush.
    func deliverQueuedNotifications() {
        let pending = pendingObservationIDs
        pendingObservationIDs = []
        guard !pending.isEmpty else { return }
        fire({ pending.contains($0.id) }) { callback in
            if case .plain(let call) = callback { call() }
        }
    }

    var hasPendingNotifications: Bool { !pendingObservationIDs.isEmpty }
}
