/// A model class of a schema: a name and its properties in declaration order.
///
/// Objects store their values in the same order, so a property's index is its slot. A class is a
/// reference type so that every object of a scope can point at it for the price of one pointer.
///
/// ```swift
/// let shape = ModelClass(name: "Shape", properties: [
///     PropertyDefinition(name: "x", type: .float),
///     PropertyDefinition(name: "y", type: .float),
/// ])
/// shape.propertyIndex(named: "y")   // 1
/// ```
public final class ModelClass: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let properties: [PropertyDefinition]
    private let indexByName: [String: Int]
    /// Indexes of the properties that hold references, for walking the object graph.
    let referenceIndexes: [Int]

    public init(name: String, properties: [PropertyDefinition]) {
        self.name = name
        self.properties = properties
        var indexByName: [String: Int] = [:]
        for (index, property) in properties.enumerated() where indexByName[property.name] == nil {
            indexByName[property.name] = index
        }
        self.indexByName = indexByName
        self.referenceIndexes = properties.indices.filter { properties[$0].type.referencedClassName != nil }
    }

    public func propertyIndex(named name: String) -> Int? { indexByName[name] }

    public func property(named name: String) -> PropertyDefinition? {
        indexByName[name].map { properties[$0] }
    }

    /// Every property at its default, in declaration order.
    public var defaultValues: [Value] { properties.map(\.defaultValue) }

    public var description: String { name }

    public static func == (lhs: ModelClass, rhs: ModelClass) -> Bool {
        lhs === rhs || (lhs.name == rhs.name && lhs.properties == rhs.properties)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(properties)
    }
}
