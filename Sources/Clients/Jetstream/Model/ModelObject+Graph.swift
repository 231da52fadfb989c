extension ModelObject {
    /// Keeps parent relationships, attachment and detachment in step with one synced property write.
    ///
    /// Removals are handled before additions, and unreachable objects are swept after both, so an
    /// object that moves within one write (e.g. into a newly added subtree) never leaves the scope.
    func updateChildren<Value: PropertyValue>(
        key: String, from oldValue: Value, to newValue: Value, elementChanges: ElementChanges?
    ) {
        let oldChildren = oldValue.referencedObjects
        let newChildren = newValue.referencedObjects
        // A collection's difference is usually a few elements: only those can gain or lose the edge.
        let removedCandidates = elementChanges.map { $0.removed.compactMap { $0 as? ModelObject } } ?? oldChildren
        let addedCandidates = elementChanges.map { $0.added.compactMap { $0 as? ModelObject } } ?? newChildren
        let lost = Self.unique(removedCandidates, notIn: newChildren)
        let gained = Self.unique(addedCandidates, notIn: oldChildren)
        guard !lost.isEmpty || !gained.isEmpty else { return }
        updateChildren(key: key, lost: lost, gained: gained)
    }

    private func updateChildren(key: String, lost: [ModelObject], gained: [ModelObject]) {
        var lostChildren: [ModelObject] = []
        for child in lost {
            child.parentRelationships.removeAll { $0.parent == nil || $0.refers(to: self, key: key) }
            lostChildren.append(child)
            child.fireParent(self, key: key) { $0.kind == .removedFromParent }
        }
        for child in gained {
            if !child.parentRelationships.contains(where: { $0.refers(to: self, key: key) }) {
                child.parentRelationships.append(ParentRelationship(parent: self, key: key))
            }
            child.fireParent(self, key: key) { $0.kind == .addedToParent }
            if let scope, child.scope == nil {
                scope.attach(child)
            }
        }
        if !lostChildren.isEmpty, let scope {
            scope.removeUnreachableObjects(after: lostChildren)
        }
    }

    /// `candidates` without duplicates and without the objects in `others`.
    private static func unique(_ candidates: [ModelObject], notIn others: [ModelObject]) -> [ModelObject] {
        guard !candidates.isEmpty else { return [] }
        var seen: Set<ObjectIdentifier> = []
        let unique = candidates.filter { seen.insert(ObjectIdentifier($0)).inserted }
        if unique.count <= 8 {
            return unique.filter { candidate in !others.contains { $0 === candidate } }
        }
        let excluded = Set(others.map(ObjectIdentifier.init))
        return unique.filter { !excluded.contains(ObjectIdentifier($0)) }
    }
}

/// One (parent, key) edge of the object graph, held by the child; the parent is weak because the
/// parent's property already holds the child strongly.
struct ParentRelationship {
    weak var parent: ModelObject?
    let key: String

    func refers(to object: ModelObject, key: String) -> Bool {
        parent === object && self.key == key
    }
}
