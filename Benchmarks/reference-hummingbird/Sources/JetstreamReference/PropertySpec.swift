/// One declared property of a model class: its kind, whether it may be null, and the value an
/// `add` that omits it gets.
struct PropertySpec: Sendable {
    let name: String
    let kind: PropertyKind
    let nullable: Bool
    let defaultValue: JSONValue

    init(_ name: String, _ kind: PropertyKind, nullable: Bool = false, default defaultValue: JSONValue? = nil) {
        self.name = name
        self.kind = kind
        self.nullable = nullable
        if let defaultValue {
            self.defaultValue = defaultValue
        } else if nullable {
            self.defaultValue = .null
        } else {
            // Required properties without a declared default start at their type's zero value,
            // as the gateway's model does.
            switch kind {
            case .string: self.defaultValue = .string("")
            case .float, .color: self.defaultValue = .number(0)
            case .enumeration(let values): self.defaultValue = .string(values.first ?? "")
            case .shapeList: self.defaultValue = .array([])
            }
        }
    }
}
