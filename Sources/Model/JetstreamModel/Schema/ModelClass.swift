import JetstreamJSON

/// A model class of a schema: a name, an optional superclass and its properties.
///
/// Objects store their values in the order of ``properties`` (inherited ones first), so a
/// property's index is its slot. A class is a reference type so that every object of a scope can
/// point at it for the price of one pointer.
///
/// ```swift
/// let shape = ModelClass(name: "Shape", properties: [
///     PropertyDefinition(name: "x", type: .float),
///     PropertyDefinition(name: "y", type: .float),
/// ])
/// let circle = ModelClass(name: "Circle", superclassName: "Shape", properties: [
///     PropertyDefinition(name: "radius", type: .float),
/// ])
/// let schema = try Schema(classes: [shape, circle], scopes: [])
/// schema.modelClass(named: "Circle")!.properties.map(\.name)   // ["x", "y", "radius"]
/// ```
public final class ModelClass: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    /// The class this one extends, if any. A reference to a class also accepts its subclasses.
    public let superclassName: String?
    /// The properties this class declares itself.
    public let ownProperties: [PropertyDefinition]
    /// Every property, inherited ones first. Only classes obtained from a ``Schema`` include
    /// inherited properties; a class built in code holds just its own until a schema resolves it.
    public let properties: [PropertyDefinition]
    /// Superclass names, nearest first (resolved by the schema).
    public let ancestorNames: [String]
    private let indexByName: [String: Int]
    /// Indexes of the properties that hold references, for walking the object graph.
    let referenceIndexes: [Int]
    /// The rules this class declares itself (`rules:`), nil when it declares none.
    public let ownRules: ClassRules?
    /// Who may change and remove its objects: its own rules, else its nearest ancestor's (resolved
    /// by the schema), else open to every writer.
    public let rules: ClassRules
    /// Whether any rule — the class's, a property's `write` or `immutable` — constrains writers:
    /// the applier checks nothing for a class without (the common case costs one branch).
    public let hasRules: Bool

    public convenience init(
        name: String, superclassName: String? = nil, properties: [PropertyDefinition], rules: ClassRules? = nil
    ) {
        self.init(
            name: name, superclassName: superclassName, ownProperties: properties, allProperties: properties,
            ancestorNames: superclassName.map { [$0] } ?? [], ownRules: rules, rules: rules ?? .open)
    }

    init(
        name: String, superclassName: String?, ownProperties: [PropertyDefinition],
        allProperties: [PropertyDefinition], ancestorNames: [String], ownRules: ClassRules?, rules: ClassRules
    ) {
        self.name = name
        self.superclassName = superclassName
        self.ownProperties = ownProperties
        self.properties = allProperties
        self.ancestorNames = ancestorNames
        self.ownRules = ownRules
        self.rules = rules
        self.hasRules = !rules.isOpen || allProperties.contains(where: \.hasRules)
        var indexByName: [String: Int] = [:]
        for (index, property) in allProperties.enumerated() where indexByName[property.name] == nil {
            indexByName[property.name] = index
        }
        self.indexByName = indexByName
        self.referenceIndexes = allProperties.indices.filter { allProperties[$0].type.referencedClassName != nil }
    }

    /// The slot of the property `name` in ``properties`` and in every object's values.
    public func propertyIndex(named name: String) -> Int? { indexByName[name] }

    /// The property `name`, inherited ones included.
    public func property(named name: String) -> PropertyDefinition? {
        indexByName[name].map { properties[$0] }
    }

    /// True when this class is `className` or extends it (directly or not).
    public func isKind(of className: String) -> Bool {
        name == className || ancestorNames.contains(className)
    }

    /// Every property at its default, in slot order.
    public var defaultValues: [Value] { properties.map(\.defaultValue) }

    public var description: String { name }

    public static func == (lhs: ModelClass, rhs: ModelClass) -> Bool {
        lhs === rhs
            || (lhs.name == rhs.name && lhs.superclassName == rhs.superclassName
                && lhs.ownProperties == rhs.ownProperties && lhs.ownRules == rhs.ownRules)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(superclassName)
        hasher.combine(ownProperties)
        hasher.combine(ownRules)
    }
}

extension ModelClass {
    /// This class's schema entry: `extends` when it has a superclass, then the properties it
    /// declares, in the long form and declaration order.
    public var jsonValue: JSONValue {
        var properties = JSONObject()
        if let superclassName { properties.appendUnchecked(key: "extends", value: .string(superclassName)) }
        if let ownRules {
            var rules = JSONObject()
            if ownRules.write != .any {
                rules.appendUnchecked(key: "write", value: .string(ownRules.write.description))
            }
            if ownRules.delete != .any {
                rules.appendUnchecked(key: "delete", value: .string(ownRules.delete.description))
            }
            properties.appendUnchecked(key: "rules", value: .object(rules))
        }
        for property in ownProperties {
            properties.appendUnchecked(key: property.name, value: property.jsonValue)
        }
        return .object(properties)
    }
}
