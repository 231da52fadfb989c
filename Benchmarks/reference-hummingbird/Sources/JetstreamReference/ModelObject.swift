import Foundation

/// One object of a scope: its class and one value per declared property, in schema order.
struct ModelObject: Sendable {
    let uuid: UUID
    let modelClass: ModelClass
    var values: [JSONValue]

    /// The object as a fragment carrying every property (what a state or snapshot lists).
    func fragment(type: FragmentType) -> Fragment {
        let entries = zip(modelClass.properties, values).map { (name: $0.name, value: $1) }
        return Fragment(type: type, uuid: uuid, clsName: modelClass.name, properties: PropertyList(entries: entries))
    }

    /// The targets of `Canvas.shapes` (empty for objects without references).
    var shapeReferences: [UUID] {
        guard let index = modelClass.propertyIndex(named: "shapes"), case .array(let elements) = values[index] else {
            return []
        }
        return elements.compactMap { element in
            if case .string(let text) = element { UUID(uuidString: text) } else { nil }
        }
    }
}
