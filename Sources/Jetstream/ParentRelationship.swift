/// One (parent, key) edge of the object graph, held by the child; the parent is weak because the
/// parent's property already holds the child strongly.
struct ParentRelationship {
    weak var parent: ModelObject?
    let key: String

    func refers(to object: ModelObject, key: String) -> Bool {
        parent === object && self.key == key
    }
}
