import Foundation
import JetstreamModel
import Testing

@Suite("Schema")
struct SchemaTests {
    @Test("the demo schema: canvas of shapes, scopes demo and canvas-*")
    func demo() throws {
        let schema = Schema.demo
        #expect(schema.classes.map(\.name) == ["Canvas", "Shape"])
        #expect(schema.rootClass(forScope: "demo")?.name == "Canvas")
        #expect(schema.rootClass(forScope: "canvas-42")?.name == "Canvas")
        #expect(schema.rootClass(forScope: "other") == nil)
        let shape = try #require(schema.modelClass(named: "Shape"))
        #expect(shape.properties.map(\.name) == ["x", "y", "width", "height", "color", "label", "kind"])
        #expect(shape.property(named: "width")?.defaultValue == .float(100))
        #expect(shape.property(named: "width")?.constraints.min == 0)
        #expect(shape.property(named: "color")?.isNullable == true)
        #expect(shape.property(named: "kind")?.type == .enumeration(.strings(["rect", "oval"])))
        #expect(schema.modelClass(named: "Canvas")?.property(named: "shapes")?.type == .collection(.reference("Shape")))
    }

    @Test("every type of docs/model.md, short and long forms, collections as YAML lists or strings")
    func allTypes() throws {
        let schema = try Schema.parse(
            yaml: """
                models:
                  All:
                    s: String
                    b: Bool
                    i8: Int8
                    i16: Int16
                    i32: Int32
                    i64: Int64
                    i: Int
                    u8: UInt8
                    u16: UInt16
                    u32: UInt32
                    u64: UInt64
                    u: UInt
                    f: Float
                    d: Double
                    date: Date
                    color: Color?
                    e: { enum: [1, 2, 3], default: 2 }
                    ref: All?
                    refs: [All]
                    refs2: "[All]"
                    tags: { type: [String], maxCount: 3 }
                    nums: { type: "[Int]", min: 0 }
                scopes:
                  "all": All
                """)
        let all = try #require(schema.modelClass(named: "All"))
        let types = all.properties.map(\.type)
        #expect(
            types == [
                .string, .bool, .int8, .int16, .int32, .int64, .int, .uint8, .uint16, .uint32, .uint64, .uint, .float,
                .double, .date, .color, .enumeration(.integers([1, 2, 3])), .reference("All"),
                .collection(.reference("All")), .collection(.reference("All")), .collection(.string),
                .collection(.int),
            ])
        #expect(all.property(named: "e")?.defaultValue == .int(2))
        #expect(all.property(named: "i8")?.defaultValue == .int(0))
        #expect(all.property(named: "u8")?.defaultValue == .uint(0))
        #expect(all.property(named: "ref")?.defaultValue == .null)
        #expect(all.property(named: "refs")?.defaultValue == .references([]))
        #expect(all.property(named: "tags")?.defaultValue == .list([]))
        #expect(all.property(named: "s")?.defaultValue == .string(""))
        #expect(all.property(named: "tags")?.constraints.maxCount == 3)
    }

    @Test("JSON schemas, and the schema's own JSON form, parse to the same schema")
    func jsonRoundTrip() throws {
        let fromJSON = try Schema.parse(json: Array(Schema.demo.jsonValue.encoded()))
        #expect(fromJSON == Schema.demo)
        let fixtures = try Schema.parse(json: Fixtures.schema.jsonValue.encoded())
        #expect(fixtures == Fixtures.schema)
        #expect(fixtures.jsonValue.encoded() == Fixtures.schema.jsonValue.encoded())
    }

    @Test("a schema is constructible in code")
    func inCode() throws {
        let shape = ModelClass(
            name: "Shape",
            properties: [
                PropertyDefinition(name: "x", type: .float),
                PropertyDefinition(
                    name: "w", type: .float, defaultValue: .float(100), constraints: PropertyConstraints(min: 0)),
            ])
        let canvas = ModelClass(
            name: "Canvas", properties: [PropertyDefinition(name: "shapes", type: .collection(.reference("Shape")))])
        let schema = try Schema(
            classes: [canvas, shape], scopes: [ScopeRule(pattern: "c-?", rootClassName: "Canvas")])
        #expect(schema.rootClass(forScope: "c-1") == canvas)
        #expect(schema.rootClass(forScope: "c-12") == nil)
        #expect(throws: SchemaError.self) {
            try Schema(
                classes: [ModelClass(name: "A", properties: [PropertyDefinition(name: "b", type: .reference("B"))])],
                scopes: [])
        }
    }

    @Test("scope globs: first rule wins, * and ? match")
    func globs() {
        let rule = ScopeRule(pattern: "room-*-?", rootClassName: "X")
        #expect(rule.matches("room-abc-1"))
        #expect(rule.matches("room--1"))
        #expect(!rule.matches("room-abc-12x"))
        #expect(rule.matches("room-a-b-c"))
        #expect(!rule.matches("room-1"))
        #expect(ScopeRule(pattern: "*", rootClassName: "X").matches(""))
        #expect(!ScopeRule(pattern: "a", rootClassName: "X").matches("ab"))
    }

    @Test(
        "bad schemas name the file, class and property, and what is wrong",
        arguments: [
            ("models:\n  Shape:\n    width: { type: Float, min: x }\n", "Shape", "width", "'min' must be a number"),
            ("models:\n  Shape:\n    x: Flaot\n", "Shape", "x", "names no class"),
            ("models:\n  Shape:\n    x: { type: Float, default: \"a\" }\n", "Shape", "x", "default"),
            ("models:\n  Shape:\n    x: { type: Int8, default: 300 }\n", "Shape", "x", "does not fit"),
            ("models:\n  Shape:\n    x: { type: Float, maxLength: 3 }\n", "Shape", "x", "maxLength"),
            ("models:\n  Shape:\n    x: { type: String, pattern: \"[\" }\n", "Shape", "x", "pattern"),
            ("models:\n  Shape:\n    x: { type: Float, mn: 3 }\n", "Shape", "x", "unknown key 'mn'"),
            ("models:\n  Shape:\n    x: { enum: [] }\n", "Shape", "x", "enum"),
            ("models:\n  Shape:\n    x: { enum: [a, a] }\n", "Shape", "x", "twice"),
            ("models:\n  Shape:\n    x: { enum: [a, b], default: c }\n", "Shape", "x", "not one of"),
            ("models:\n  Shape:\n    x: \"[Shape]?\"\n", "Shape", "x", "cannot be nullable"),
            ("models:\n  Shape:\n    x: { type: Int, maxCount: 2 }\n", "Shape", "x", "maxCount"),
            ("models:\n  Shape:\n    x: { type: Int, min: 5, max: 1 }\n", "Shape", "x", "above max"),
        ])
    func badSchemas(yaml: String, className: String, property: String, message: String) {
        do {
            _ = try Schema.parse(yaml: yaml, file: "bad.yaml")
            Issue.record("expected an error for \(yaml)")
        } catch {
            #expect(error.file == "bad.yaml")
            #expect(error.className == className)
            #expect(error.property == property)
            #expect(error.message.contains(message), "\(error)")
            #expect(error.description.hasPrefix("bad.yaml: class \(className), property \(property): "))
        }
    }

    @Test("document-level errors: not YAML, no models, unknown key, scope root missing, duplicate key")
    func documentErrors() {
        for yaml in [
            "models: [", "scopes: {}", "models: {}\nextra: 1", "models: { A: { x: Int } }\nscopes: { a: { root: B } }",
            "models:\n  A: { x: Int }\n  A: { y: Int }\n", "",
        ] {
            #expect(throws: SchemaError.self, "\(yaml)") { try Schema.parse(yaml: yaml, file: "f.yaml") }
        }
    }

    @Test("load(from:) reads YAML and JSON files and names the file in errors")
    func loadFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let yamlURL = directory.appendingPathComponent("models.yaml")
        try Schema.demoYAML.write(to: yamlURL, atomically: true, encoding: .utf8)
        #expect(try Schema.load(from: yamlURL) == Schema.demo)
        let jsonURL = directory.appendingPathComponent("models.json")
        try Data(Schema.demo.jsonValue.encoded()).write(to: jsonURL)
        #expect(try Schema.load(from: jsonURL) == Schema.demo)
        let badURL = directory.appendingPathComponent("bad.yaml")
        try "models:\n  Shape:\n    x: Flaot\n".write(to: badURL, atomically: true, encoding: .utf8)
        #expect {
            try Schema.load(from: badURL)
        } throws: { error in
            (error as? SchemaError)?.file == badURL.path && "\(error)".contains("Flaot")
        }
        #expect(throws: SchemaError.self) { try Schema.load(from: directory.appendingPathComponent("missing.yaml")) }
    }
}
