extension ModelObject {
    /// The one path every property write takes: equality check, the store (announced to the
    /// Observation registrar), graph bookkeeping, collection callbacks, change recording, then
    /// change and tree notifications.
    func setValue<Value: PropertyValue>(_ newValue: Value, in slot: PropertySlot<Value>) {
        let oldValue = slot.value
        guard oldValue != newValue else { return }
        store(newValue, in: slot)
        let elementChanges = Value.elementChanges(from: oldValue, to: newValue)
        if slot.isSynced {
            scope?.stateMirror = nil
            if Value.referencedModelType != nil {
                updateChildren(key: slot.key, from: oldValue, to: newValue, elementChanges: elementChanges)
            }
        }
        if let elementChanges {
            notifyElementChanges(elementChanges, key: slot.key)
        }
        if slot.isSynced {
            scope?.recordChange(of: self, key: slot.key, oldValue: oldValue)
        }
        didChange(key: slot.key)
    }

    private func notifyElementChanges(_ changes: ElementChanges, key: String) {
        for element in changes.removed {
            fireElement(element) { $0.kind == .collectionRemove(key: key) }
        }
        for element in changes.added {
            fireElement(element) { $0.kind == .collectionAdd(key: key) }
        }
    }

    /// Fires immediate observers and marks the queued ones registered now (this object's change
    /// observers for `key`, and the tree observers of this object and every ancestor) for the next
    /// flush. Observations registered later do not see this change.
    func didChange(key: String) {
        let changed: Set<String> = [key]
        firePlain { $0.matchesChange(of: changed, queued: false) }
        markPending { $0.matchesChange(of: changed, queued: true) }
        var stack: [ModelObject] = [self]
        var visited: Set<ObjectIdentifier> = []
        while let object = stack.popLast() {
            guard visited.insert(ObjectIdentifier(object)).inserted else { continue }
            object.markPending { $0.kind == .treeChange }
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

    /// Calls the plain callbacks of the live observations that `matches` selects.
    func firePlain(where matches: (Observation) -> Bool) {
        for observation in selected(matches) where isActive(observation) {
            if case .plain(let call) = observation.callback { call() }
        }
    }

    func fireElement(_ element: Any, where matches: (Observation) -> Bool) {
        for observation in selected(matches) where isActive(observation) {
            if case .element(let call) = observation.callback { call(element) }
        }
    }

    func fireScope(_ scope: Scope, where matches: (Observation) -> Bool) {
        for observation in selected(matches) where isActive(observation) {
            if case .scope(let call) = observation.callback { call(scope) }
        }
    }

    func fireParent(_ parent: ModelObject, key: String, where matches: (Observation) -> Bool) {
        for observation in selected(matches) where isActive(observation) {
            if case .parent(let call) = observation.callback { call(parent, key) }
        }
    }

    private func selected(_ matches: (Observation) -> Bool) -> [Observation] {
        observations.isEmpty ? [] : observations.filter { $0.observer != nil && matches($0) }
    }

    /// False for an observation cancelled (or whose observer went away) earlier in the same round.
    private func isActive(_ observation: Observation) -> Bool {
        observation.observer != nil && observations.contains { $0.id == observation.id }
    }

    /// Delivers this object's marked queued observations, each once, for one flush.
    func deliverQueuedNotifications() {
        let pending = pendingObservationIDs
        pendingObservationIDs = []
        guard !pending.isEmpty else { return }
        firePlain { pending.contains($0.id) }
    }

    var hasPendingNotifications: Bool { !pendingObservationIDs.isEmpty }
}
