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

    /// Detaches the objects that are no longer reachable from the root after `lostChildren` lost a
    /// parent relationship: exactly those, so a shared child that another parent still holds stays,
    /// and unreachable cycles leave too.
    ///
    /// Everything in the scope was reachable before, and only paths through the removed edges
    /// broke, so only objects reachable from the lost children (the candidates) can have become
    /// unreachable. A candidate stays if a mark starting at candidates with a parent outside the
    /// candidates (or the root) reaches it. Cost: O(candidates), not O(scope).
    func removeUnreachableObjects(after lostChildren: [ModelObject]) {
        orphanCandidates += lostChildren
        guard sweepDeferralDepth == 0 else { return }
        let starts = orphanCandidates
        orphanCandidates = []
        var candidates: [ModelObject] = []
        var candidateIDs: Set<ObjectIdentifier> = []
        var stack = starts
        while let object = stack.popLast() {
            guard object.scope === self, candidateIDs.insert(ObjectIdentifier(object)).inserted else { continue }
            candidates.append(object)
            stack += object.children
        }
        var reachable: Set<ObjectIdentifier> = []
        stack = candidates.filter { candidate in
            candidate === root
                || candidate.parentRelationships.contains { relationship in
                    guard let parent = relationship.parent, parent.scope === self else { return false }
                    return !candidateIDs.contains(ObjectIdentifier(parent))
                }
        }
        while let object = stack.popLast() {
            let id = ObjectIdentifier(object)
            guard candidateIDs.contains(id), reachable.insert(id).inserted else { continue }
            stack += object.children
        }
        let unreachable = candidates.filter { !reachable.contains(ObjectIdentifier($0)) }
        if !unreachable.isEmpty {
            detach(unreachable)
        }
    }

    /// Runs `body` with the reachability sweep postponed to its end (one sweep for a whole batch).
    func withDeferredSweep<Result>(_ body: () throws -> Result) rethrows -> Result {
        sweepDeferralDepth += 1
        defer {
            sweepDeferralDepth -= 1
            if sweepDeferralDepth == 0 && !orphanCandidates.isEmpty {
                removeUnreachableObjects(after: [])
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
