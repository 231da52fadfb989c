import Foundation
import JetstreamJSON

/// One object of a scope: its UUID, class and property values (in the class's declaration order).
///
/// ```swift
/// if let shape = state.object(uuid) {
///     shape["x"]   // .float(10)
/// }
/// ```
public struct ScopeObject: Sendable, Hashable {
    public let uuid: UUID
    public let modelClass: ModelClass
    /// Values in the order of `modelClass.properties`.
    public internal(set) var values: [Value]
    var parents: ParentSet

    init(uuid: UUID, modelClass: ModelClass) {
        self.uuid = uuid
        self.modelClass = modelClass
        self.values = modelClass.defaultValues
        self.parents = ParentSet()
    }

    /// The object's exact class name, as fragments carry it.
    public var clsName: String { modelClass.name }

    /// The value of the property `key`, or nil when the class has no such property.
    public subscript(key: String) -> Value? {
        modelClass.propertyIndex(named: key).map { values[$0] }
    }

    /// Every property, in declaration order, as fragment JSON.
    public var propertiesJSON: JSONObject {
        var object = JSONObject()
        object.reserveCapacity(values.count)
        for (property, value) in zip(modelClass.properties, values) {
            object.appendUnchecked(key: property.name, value: value.jsonValue)
        }
        return object
    }

    /// The UUIDs this object refers to, in property order, duplicates included.
    var referencedUUIDs: [UUID] {
        modelClass.referenceIndexes.flatMap { values[$0].referencedUUIDs }
    }
}
