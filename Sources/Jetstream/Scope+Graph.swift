import Foundation

extension Scope {
    /// Adds `object` and every descendant not yet in a scope, in pre-order, recording `add`s.
    ///
    /// An object that belongs to another scope stays there (one scope per object, as in the
    /// original); an object whose UUID another object of this scope already has is not attached.
    func attach(_ object: ModelObject) {
        var stack: [ModelObject] = [object]
        while let current = stack.popLast() {
            guard current.scope == nil, objectsByUUID[current.uuid] == nil else { continue }
            current.scope = self
            objectsByUUID[current.uuid] = current
            recordAttach(of: current)
            if current.hasPendingNotifications {
                enqueueNotifications(of: current)
            }
            current.fireScope(self) { $0.kind == .attach }
            stack += current.children.reversed()
        }
    }

    /// Detaches every object that is no longer reachable from the root: exactly those, so a shared
    /// child that another parent still holds stays, and unreachable cycles leave too.
    func removeUnreachableObjects() {
        if sweepDeferralDepth > 0 {
            sweepNeeded = true
            return
        }
        var reachable: Set<ObjectIdentifier> = []
        var stack: [ModelObject] = [root]
        while let object = stack.popLast() {
            guard object.scope === self, reachable.insert(ObjectIdentifier(object)).inserted else { continue }
            stack += object.children
        }
        guard reachable.count < objectsByUUID.count else { return }
        let unreachable = objectsByUUID.values.filter { !reachable.contains(ObjectIdentifier($0)) }
        detach(unreachable)
    }

    /// Runs `body` with the reachability sweep postponed to its end (one sweep for a whole batch).
    func withDeferredSweep<Result>(_ body: () throws -> Result) rethrows -> Result {
        sweepDeferralDepth += 1
        defer {
            sweepDeferralDepth -= 1
            if sweepDeferralDepth == 0 && sweepNeeded {
                sweepNeeded = false
                removeUnreachableObjects()
            }
        }
        return try body()
    }

    func removeAllObjects() {
        detach(Array(objectsByUUID.values))
    }

    private func detach(_ objects: [ModelObject]) {
        for object in objects {
            object.scope = nil
            objectsByUUID[object.uuid] = nil
            recordDetach(of: object)
        }
        for object in objects {
            object.fireScope(self) { $0.kind == .detach }
        }
    }

    /// Changes the UUID of an object of this scope (the root adopting the server's root UUID).
    func changeUUID(of object: ModelObject, to uuid: UUID) {
        guard object.uuid != uuid else { return }
        stateMirror = nil
        if object.scope === self {
            objectsByUUID[object.uuid] = nil
            objectsByUUID[uuid] = object
        }
        object.uuid = uuid
    }
}
