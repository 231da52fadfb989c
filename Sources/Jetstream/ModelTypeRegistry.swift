/// The model classes a scope can instantiate by `clsName`: every class reachable from the root class
/// through synced property types, plus the ones named explicitly.
struct ModelTypeRegistry {
    private(set) var typesByName: [String: ModelObject.Type] = [:]
    /// Class names in discovery order (root class first), for schema output.
    private(set) var orderedNames: [String] = []

    init(root: ModelObject.Type, additionalTypes: [ModelObject.Type] = []) {
        var pending: [ModelObject.Type] = [root] + additionalTypes
        while !pending.isEmpty {
            let type = pending.removeFirst()
            let name = type.className
            guard typesByName[name] == nil else { continue }
            typesByName[name] = type
            orderedNames.append(name)
            let prototype = type.init()
            for slot in prototype.slots where slot.isSynced {
                if let referenced = slot.referencedModelType {
                    pending.append(referenced)
                }
            }
        }
    }

    func type(named name: String) -> ModelObject.Type? {
        typesByName[name]
    }
}
