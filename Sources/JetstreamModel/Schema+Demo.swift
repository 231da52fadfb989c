extension Schema {
    /// The demo schema's YAML: a canvas of shapes (docs/model.md), served by `jetstream serve` when no
    /// schema is given. Scopes named `demo` or `canvas-*` have a Canvas root.
    public static let demoYAML = """
        models:
          Canvas:
            name: String?
            shapes: [Shape]
          Shape:
            x: Float
            y: Float
            width:  { type: Float, default: 100, min: 0 }
            height: { type: Float, default: 100, min: 0 }
            color:  Color?
            label:  { type: String, maxLength: 200, default: "" }
            kind:   { enum: [rect, oval], default: rect }
        scopes:
          demo: { root: Canvas }
          "canvas-*": { root: Canvas }
        """

    /// The demo schema, parsed from ``demoYAML``.
    ///
    /// ```swift
    /// Schema.demo.rootClass(forScope: "canvas-1")?.name   // "Canvas"
    /// ```
    public static let demo: Schema = {
        do {
            return try Schema.parse(yaml: demoYAML, file: "<demo schema>")
        } catch {
            fatalError("the embedded demo schema is invalid: \(error)")
        }
    }()
}
