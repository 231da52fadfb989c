import JetstreamJSON
import Yams

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

    /// The demo schema with more, for tests and benchmarks that need a richer model than the canvas:
    /// only what they add is written down, and their `Canvas` and `Shape` stay the demo's. The
    /// models of `yaml` follow the demo's (a class the demo has gets the extra properties after its
    /// own), and so do its scope rules. `file` only labels errors.
    ///
    /// ```swift
    /// let layered = try Schema.demo(adding: """
    ///     models:
    ///       Canvas: { layers: [Layer] }
    ///       Layer: { name: String?, shapes: [Shape] }
    ///     scopes:
    ///       "layered-*": { root: Canvas }
    ///     """)
    /// ```
    public static func demo(adding yaml: String, file: String? = nil) throws(SchemaError) -> Schema {
        guard case .object(var document) = try tree(yaml: demoYAML, file: "<demo schema>"),
            case .object(let addition) = try tree(yaml: yaml, file: file)
        else { throw SchemaError(file: file, message: "the addition must be a mapping with 'models' and 'scopes'") }
        for section in addition {
            // Anything but two mappings (an unknown key, a malformed section) is left for parse(tree:) to refuse.
            guard case .object(var merged)? = document[section.key], case .object(let added) = section.value else {
                document[section.key] = section.value
                continue
            }
            for entry in added {
                if case .object(var existing)? = merged[entry.key], case .object(let extra) = entry.value {
                    for member in extra { existing[member.key] = member.value }
                    merged[entry.key] = .object(existing)
                } else {
                    merged[entry.key] = entry.value
                }
            }
            document[section.key] = .object(merged)
        }
        do {
            return try parse(tree: .object(document))
        } catch {
            throw error.inFile(file)
        }
    }

    /// The JSON tree of a YAML document, before it is read as a schema.
    private static func tree(yaml: String, file: String?) throws(SchemaError) -> JSONValue {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw SchemaError(file: file, message: "invalid YAML: \(error)")
        }
        guard let root else { throw SchemaError(file: file, message: "the document is empty") }
        do {
            return try YAMLTree.json(from: root, path: "document")
        } catch {
            throw error.inFile(file)
        }
    }
}
