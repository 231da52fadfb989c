import Foundation

extension ModelObject {
    /// The root of a new scope from `PUT /v1/scopes/{name}`: the class must be the scope rule's,
    /// the UUID is generated when absent, and the properties are checked like a fragment's (the
    /// root may not reference anything yet: the scope is empty).
    static func root(
        from request: CreateScopeRequest.Root, rootClass: ModelClass, scope: String
    ) throws(FragmentError) -> ModelObject {
        guard request.clsName == rootClass.name else {
            throw FragmentError(
                .unknownClass, "scopes named '\(scope)' have a root of class \(rootClass.name), not \(request.clsName)")
        }
        var uuid = UUID()
        if let text = request.uuid {
            guard let parsed = UUID(uuidString: text) else {
                throw FragmentError(.malformedFragment, "'uuid' must be a UUID string")
            }
            uuid = parsed
        }
        var root = ModelObject(uuid: uuid, modelClass: rootClass, values: rootClass.defaultValues)
        for (key, value) in request.properties ?? [:] {
            guard let index = rootClass.propertyIndex(named: key) else {
                throw FragmentError(.unknownProperty, "\(rootClass.name) has no property '\(key)'", property: key)
            }
            root.values[index] = try rootClass.properties[index].validate(value) { _ in nil }
        }
        return root
    }
}
