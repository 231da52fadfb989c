extension ModelObject {
    /// Keeps parent relationships, attachment and detachment in step with one synced property write.
    ///
    /// Removals are handled before additions, and unreachable objects are swept after both, so an
    /// object that moves within one write (e.g. into a newly added subtree) never leaves the scope.
    func updateChildren(key: String, old: [ModelObject], new: [ModelObject]) {
        let oldIDs = Set(old.map(ObjectIdentifier.init))
        let newIDs = Set(new.map(ObjectIdentifier.init))
        var lostChild = false
        for child in Self.unique(old) where !newIDs.contains(ObjectIdentifier(child)) {
            child.parentRelationships.removeAll { $0.parent == nil || $0.refers(to: self, key: key) }
            lostChild = true
            child.fireParent(self, key: key) { $0.kind == .removedFromParent }
        }
        for child in Self.unique(new) where !oldIDs.contains(ObjectIdentifier(child)) {
            if !child.parentRelationships.contains(where: { $0.refers(to: self, key: key) }) {
                child.parentRelationships.append(ParentRelationship(parent: self, key: key))
            }
            child.fireParent(self, key: key) { $0.kind == .addedToParent }
            if let scope, child.scope == nil {
                scope.attach(child)
            }
        }
        if lostChild, let scope {
            scope.removeUnreachableObjects()
        }
    }

    private static func unique(_ objects: [ModelObject]) -> [ModelObject] {
        var seen: Set<ObjectIdentifier> = []
        return objects.filter { seen.insert(ObjectIdentifier($0)).inserted }
    }
}
