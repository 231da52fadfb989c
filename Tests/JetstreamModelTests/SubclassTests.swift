import Foundation
import JetstreamModel
import Testing

/// Subclasses: `extends` in the schema; a reference to a class accepts its subclasses.
@Suite("Subclasses")
struct SubclassTests {
    static let yaml = """
        models:
          Board:
            shapes: [Shape]
            circles: [Circle]
          Shape:
            x: Float
          Circle:
            extends: Shape
            radius: { type: Float, min: 0 }
          Ring:
            extends: Circle
            inner: Float
          Loose:
            x: Float
        scopes:
          "board-*": { root: Board }
        """

    let schema = try! Schema.parse(yaml: SubclassTests.yaml, file: "sub.yaml")
    let root = Fixtures.uuid(1)

    func board() -> ScopeState {
        ScopeState(rootUUID: root, rootClass: schema.modelClass(named: "Board")!)
    }

    @Test("a subclass inherits its superclass's properties, first, and knows its ancestors")
    func inheritance() throws {
        let ring = try #require(schema.modelClass(named: "Ring"))
        #expect(ring.properties.map(\.name) == ["x", "radius", "inner"])
        #expect(ring.ownProperties.map(\.name) == ["inner"])
        #expect(ring.ancestorNames == ["Circle", "Shape"])
        #expect(ring.isKind(of: "Shape") && ring.isKind(of: "Ring") && !ring.isKind(of: "Board"))
        #expect(try Schema.parse(json: schema.jsonValue.encoded()) == schema)
    }

    @Test("a [Shape] accepts circles and rings; a [Circle] refuses a plain shape")
    func referencesAcceptSubclasses() throws {
        let (shape, circle, ring) = (Fixtures.uuid(2), Fixtures.uuid(3), Fixtures.uuid(4))
        let applied = try #require(
            board().applying(
                [
                    Fixtures.add(shape, "Shape", ["x": 1]), Fixtures.add(circle, "Circle", ["x": 2, "radius": 3]),
                    Fixtures.add(ring, "Ring", ["inner": 1]),
                    Fixtures.change(
                        root, "Board", ["shapes": Fixtures.refs(shape, circle, ring), "circles": Fixtures.refs(ring)]),
                ], schema: schema
            ).applied)
        #expect(applied.fragments[2].properties.keys == ["x", "radius", "inner"])
        #expect(applied.state.object(ring)?.clsName == "Ring")
        let exported = applied.state.exportFragments()
        let imported = try ScopeState(
            importing: exported, rootUUID: root, version: applied.state.version, schema: schema)
        #expect(imported == applied.state)
        let wrong = applied.state.applying(
            [Fixtures.change(root, "Board", ["circles": Fixtures.refs(shape)])], schema: schema)
        #expect(Fixtures.rejectionKinds(wrong) == [.wrongClass])
        let constrained = applied.state.applying(
            [Fixtures.change(ring, "Ring", ["radius": -1])], schema: schema)
        #expect(Fixtures.rejectionKinds(constrained) == [.outOfRange])
    }

    @Test("a change must name the object's own class, not its superclass")
    func changeNamesExactClass() throws {
        let circle = Fixtures.uuid(3)
        let state = try #require(
            board().applying(
                [Fixtures.add(circle, "Circle"), Fixtures.change(root, "Board", ["shapes": Fixtures.refs(circle)])],
                schema: schema
            ).applied?.state)
        let outcome = state.applying([Fixtures.change(circle, "Shape", ["x": 1])], schema: schema)
        #expect(Fixtures.rejectionKinds(outcome) == [.classMismatch])
    }

    @Test("subclasses of a referenced class may live in the scope; unrelated classes may not")
    func allowedClasses() throws {
        let board = try #require(schema.modelClass(named: "Board"))
        #expect(schema.allows(className: "Ring", inScopeRootedAt: board))
        #expect(!schema.allows(className: "Loose", inScopeRootedAt: board))
    }

    @Test(
        "bad inheritance is a schema error naming the class",
        arguments: [
            ("models:\n  A: { extends: B }\n", "A", "lacks"),
            ("models:\n  A: { extends: B }\n  B: { extends: A }\n", "A", "cycle"),
            ("models:\n  A: { x: Int }\n  B: { extends: A, x: Int }\n", "B", "already declared by A"),
            ("models:\n  A: { extends: 3 }\n", "A", "'extends'"),
        ])
    func badInheritance(yaml: String, className: String, message: String) {
        #expect {
            try Schema.parse(yaml: yaml, file: "bad.yaml")
        } throws: { error in
            guard let error = error as? SchemaError else { return false }
            return error.className == className && error.message.contains(message) && error.file == "bad.yaml"
        }
    }
}
