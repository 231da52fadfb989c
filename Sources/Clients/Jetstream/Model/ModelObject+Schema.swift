import JetstreamModel

extension ModelObject {
    /// The class's schema entry: its synced properties with their types, nullability, defaults
    /// (the initial values) and constraints — the same definition the gateway loads.
    ///
    /// ```swift
    /// let entry = Shape.modelClass()
    /// entry.property(named: "width")?.defaultValue  // .float(100)
    /// ```
    /// The framework creates one instance to read the initial values.
    public static func modelClass() -> ModelClass {
        let prototype = self.init()
        let properties = prototype.slots.filter(\.isSynced).map { slot in
            let implicitDefault: JetstreamModel.Value =
                slot.isNullable ? .null : JetstreamModel.Value.zero(of: slot.propertyType)
            let defaultValue = slot.defaultModelValue
            let isReference = slot.propertyType.referencedClassName != nil
            return PropertyDefinition(
                name: slot.key, type: slot.propertyType, isNullable: slot.isNullable,
                defaultValue: isReference || defaultValue == implicitDefault ? nil : defaultValue,
                constraints: slot.constraints)
        }
        return ModelClass(name: className, properties: properties)
    }

    /// A schema with this class, every class reachable from it through property types, and
    /// `additionalTypes`; one scope rule maps `scopePattern` to this class as the root.
    ///
    /// ```swift
    /// let schema = try Canvas.schema(scopePattern: "canvas-*")
    /// print(schema.jsonValue.encodedString())  // what the gateway can load
    /// ```
    /// - Throws: ``SchemaError`` when the classes do not form a valid schema (a class name that is
    ///   not an identifier, a default outside its constraints, …).
    public static func schema(
        scopePattern: String = "*", additionalTypes: [ModelObject.Type] = []
    ) throws(SchemaError) -> Schema {
        let registry = ModelTypeRegistry(root: self, additionalTypes: additionalTypes)
        return try registry.schema(scopePattern: scopePattern, rootClassName: className)
    }
}

extension ModelTypeRegistry {
    func schema(scopePattern: String, rootClassName: String) throws(SchemaError) -> Schema {
        let classes = orderedNames.compactMap { type(named: $0)?.modelClass() }
        return try Schema(classes: classes, scopes: [ScopeRule(pattern: scopePattern, rootClassName: rootClassName)])
    }
}

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
