import Foundation

/// The in-memory state of one scope: its objects by UUID, the root and the version.
struct ScopeState: Sendable {
    let name: String
    let rootUUID: UUID
    var version: Int
    var objects: [UUID: ModelObject]

    /// A new scope at version 0 holding only its root.
    init(name: String, root: ModelObject) {
        self.name = name
        self.rootUUID = root.uuid
        self.version = 0
        self.objects = [root.uuid: root]
    }

    /// The full state: the root as a `change` fragment, then every object reachable from it in
    /// pre-order as `add` fragments (the gateway's order).
    var body: StateBody {
        var fragments: [Fragment] = []
        fragments.reserveCapacity(objects.count)
        var visited: Set<UUID> = []
        var pending: [UUID] = [rootUUID]
        while let uuid = pending.popLast() {
            guard visited.insert(uuid).inserted, let object = objects[uuid] else { continue }
            fragments.append(object.fragment(type: uuid == rootUUID ? .change : .add))
            pending.append(contentsOf: object.shapeReferences.reversed())
        }
        return StateBody(name: name, version: version, rootUUID: rootUUID.wireString, fragments: fragments)
    }
}
