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
    /// The subject whose change set added the object; nil when it was added anonymously, and for
    /// the root (created with the scope). The schema's `owner` rules compare writers with it.
    public internal(set) var owner: String?
    var parents: ParentSet

    init(uuid: UUID, modelClass: ModelClass, owner: String? = nil) {
        self.uuid = uuid
        self.modelClass = modelClass
        self.values = modelClass.defaultValues
        self.owner = owner
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

extension ScopeObject {
    /// Writes this object as a full-state fragment (`change` for the root, `add` otherwise).
    func writeFragment(isRoot: Bool, to writer: inout JSONWriter) {
        writer.writeRaw(isRoot ? #"{"type":"change","uuid":"# : #"{"type":"add","uuid":"#)
        writer.write(uuid: uuid)
        writer.writeRaw(#","clsName":"#)
        writer.write(string: clsName)
        writer.writeRaw(#","properties":{"#)
        for (index, property) in modelClass.properties.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(string: property.name)
            writer.writeRaw(":")
            values[index].write(to: &writer)
        }
        writer.writeRaw("}}")
    }
}
