/// The gateway's built-in demo schema (`Schema+Demo.swift` in the gateway), hard-coded: a canvas
/// of shapes. Scopes named `demo` or `canvas-*` have a `Canvas` root.
enum DemoSchema {
    static let canvas = ModelClass(
        name: "Canvas",
        properties: [
            PropertySpec("name", .string(maxLength: nil), nullable: true),
            PropertySpec("shapes", .shapeList),
        ])

    static let shape = ModelClass(
        name: "Shape",
        properties: [
            PropertySpec("x", .float(minimum: nil)),
            PropertySpec("y", .float(minimum: nil)),
            PropertySpec("width", .float(minimum: 0), default: .number(100)),
            PropertySpec("height", .float(minimum: 0), default: .number(100)),
            PropertySpec("color", .color, nullable: true),
            PropertySpec("label", .string(maxLength: 200), default: .string("")),
            PropertySpec("kind", .enumeration(["rect", "oval"]), default: .string("rect")),
        ])

    static func modelClass(named name: String) -> ModelClass? {
        switch name {
        case canvas.name: canvas
        case shape.name: shape
        default: nil
        }
    }

    /// The root class for a scope name, nil when no scope rule matches it.
    static func rootClass(forScope name: String) -> ModelClass? {
        name == "demo" || name.hasPrefix("canvas-") ? canvas : nil
    }
}
