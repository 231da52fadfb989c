import Foundation
import JetstreamModel
import Testing

/// The original server's fragment-application scenarios (its fragment and scope tests), as a
/// server that validates strictly and applies atomically answers them.
@Suite("Server scenarios of the original")
struct ServerScenarioTests {
    typealias F = Fixtures

    @Test("1: dropping s2 from the collection removes s2 from the scope")
    func removeOrphan() throws {
        let (state, root, shapes) = try F.canvas(shapes: 2)
        #expect(state.count == 3)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["shapes": F.refs(shapes[0])])], schema: F.schema).applied)
        #expect(applied.state.count == 2)
        #expect(!applied.state.contains(shapes[1]))
        #expect(applied.removed == [shapes[1]])
        #expect(applied.state.parents(of: shapes[0]) == [ParentReference(uuid: root, key: "shapes")])
    }

    @Test("2: keeping only s2 removes s1")
    func removeOtherOrphan() throws {
        let (state, root, shapes) = try F.canvas(shapes: 2)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["shapes": F.refs(shapes[1])])], schema: F.schema).applied)
        #expect(applied.removed == [shapes[0]])
        #expect(applied.state.contains(shapes[1]))
    }

    @Test("3: newly orphaned descendants leave too (root→child→{g1,g2}, g1→g2)")
    func cascade() throws {
        let root = F.uuid(1)
        let (child, g1, g2) = (F.uuid(2), F.uuid(3), F.uuid(4))
        var state = ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas"))
        state = try F.accept(
            state,
            [
                F.add(child, "Node", ["children": F.refs(g1, g2)]),
                F.add(g1, "Node", ["children": F.refs(g2)]),
                F.add(g2, "Node"),
                F.change(root, "Canvas", ["children": F.refs(child)]),
            ])
        #expect(state.count == 4)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["children": []])], schema: F.schema).applied)
        #expect(applied.state.count == 1)
        #expect(Set(applied.removed) == [child, g1, g2])
    }

    @Test("5: add + change in either order are both accepted", arguments: [false, true])
    func addAndChangeInEitherOrder(changeFirst: Bool) throws {
        let (state, root, shapes) = try F.canvas(shapes: 2)
        let s3 = F.uuid(99)
        let add = F.add(s3, "Shape", ["x": 1])
        let change = F.change(root, "Canvas", ["shapes": F.refs(shapes[0], s3)])
        let applied = try #require(
            state.applying(changeFirst ? [change, add] : [add, change], schema: F.schema).applied)
        #expect(applied.state.contains(s3))
        #expect(applied.state.parents(of: s3) == [ParentReference(uuid: root, key: "shapes")])
        #expect(applied.removed == [shapes[1]])
    }

    @Test("6: add of an existing UUID is duplicate-add, and (atomic) nothing else applies")
    func duplicateAdd() throws {
        let (state, root, shapes) = try F.canvas(shapes: 2)
        let outcome = state.applying(
            [F.change(root, "Canvas", ["name": "renamed"]), F.add(shapes[0], "Shape")], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [nil, .duplicateAdd])
        #expect(state.root["name"] == .null)
    }

    @Test("6b: the same UUID added twice in one set is duplicate-add")
    func duplicateAddInSet() throws {
        let (state, root, _) = try F.canvas(shapes: 0)
        let s = F.uuid(50)
        let outcome = state.applying(
            [F.add(s, "Shape"), F.add(s, "Shape"), F.change(root, "Canvas", ["shapes": F.refs(s)])],
            schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [nil, .duplicateAdd, nil])
    }

    @Test("7: add of an unknown class, or of a class the scope's root cannot reach, is unknown-class")
    func unknownClass() throws {
        let (state, root, _) = try F.canvas(shapes: 0)
        let outcome = state.applying(
            [
                F.add(F.uuid(50), "Nope"), F.add(F.uuid(51), "Person"),
                F.change(root, "Canvas", ["name": "x"]),
            ], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unknownClass, .unknownClass, nil])
    }

    @Test("8: an add nothing references is unattached-add (a client bug, not a no-op)")
    func unattachedAdd() throws {
        let (state, _, _) = try F.canvas(shapes: 1)
        let outcome = state.applying([F.add(F.uuid(60), "Shape", ["x": 3])], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unattachedAdd])
    }

    @Test("8b: an add attached only to another unattached add is unattached-add for both (gap 12)")
    func unattachedChain() throws {
        let (state, _, _) = try F.canvas(shapes: 0)
        let (a, b) = (F.uuid(60), F.uuid(61))
        let outcome = state.applying(
            [F.add(a, "Node", ["children": F.refs(b)]), F.add(b, "Node")], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unattachedAdd, .unattachedAdd])
    }

    @Test("9: change of an unknown UUID is unknown-object")
    func unknownObject() throws {
        let (state, _, _) = try F.canvas(shapes: 0)
        let outcome = state.applying([F.change(F.uuid(404), "Shape", ["x": 1])], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unknownObject])
    }

    @Test("9 (differs): a change may target an object added earlier in the same set")
    func changeAfterAdd() throws {
        let (state, root, _) = try F.canvas(shapes: 0)
        let s = F.uuid(70)
        let applied = try #require(
            state.applying(
                [
                    F.add(s, "Shape", ["x": 1]), F.change(root, "Canvas", ["shapes": F.refs(s)]),
                    F.change(s, "Shape", ["x": 5]),
                ], schema: F.schema
            ).applied)
        #expect(applied.state.object(s)?["x"] == .float(5))
        #expect(applied.fragments[0].properties["x"] == 1.0)
        #expect(applied.fragments[2].properties.encodedString() == #"{"x":5.0}"#)
    }

    @Test("9c: a change before the add of its target in the set is unknown-object")
    func changeBeforeAdd() throws {
        let (state, root, _) = try F.canvas(shapes: 0)
        let s = F.uuid(70)
        let outcome = state.applying(
            [
                F.change(s, "Shape", ["x": 5]), F.add(s, "Shape"),
                F.change(root, "Canvas", ["shapes": F.refs(s)]),
            ], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unknownObject, nil, nil])
    }

    @Test("10: wrong type and unknown property are errors; a fragment with one bad key applies none")
    func typeErrors() throws {
        let (state, _, shapes) = try F.canvas(shapes: 1)
        let outcome = state.applying(
            [
                F.change(shapes[0], "Shape", ["x": "ten"]),
                F.change(shapes[0], "Shape", ["bogus": 1]),
                F.change(shapes[0], "Shape", ["y": 7, "x": "ten"]),
            ], schema: F.schema)
        guard case .rejected(let replies) = outcome else {
            Issue.record("expected rejection")
            return
        }
        #expect(replies.map { $0.error?.kind } == [.typeMismatch, .unknownProperty, .typeMismatch])
        #expect(replies[0].error?.property == "x")
        #expect(replies[1].error?.property == "bogus")
        #expect(state.object(shapes[0])?["y"] == .float(2))
    }

    @Test("11: unknown UUIDs in a collection, null for a collection, null for an optional reference")
    func referenceChecks() throws {
        let (state, root, shapes) = try F.canvas(shapes: 1)
        let outcome = state.applying(
            [
                F.change(root, "Canvas", ["shapes": F.refs(shapes[0], F.uuid(404))]),
                F.change(root, "Canvas", ["shapes": nil]),
            ], schema: F.schema)
        guard case .rejected(let replies) = outcome else {
            Issue.record("expected rejection")
            return
        }
        #expect(replies[0].error?.kind == .missingReference)
        #expect(replies[0].error?.property == "shapes[1]")
        #expect(replies[1].error?.kind == .nullNotAllowed)

        let node = F.uuid(2)
        let partner = F.uuid(3)
        var tree = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.add(node, "Node", ["partner": F.ref(partner)]), F.add(partner, "Node"),
                F.change(root, "Canvas", ["children": F.refs(node)]),
            ])
        let applied = try #require(tree.applying([F.change(node, "Node", ["partner": nil])], schema: F.schema).applied)
        tree = applied.state
        #expect(tree.object(node)?["partner"] == .null)
        #expect(applied.removed == [partner])
    }

    @Test("11b (differs): a reference to an object of another class is wrong-class, not silently dropped")
    func wrongClass() throws {
        let root = F.uuid(1)
        let node = F.uuid(2)
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [F.add(node, "Node"), F.change(root, "Canvas", ["children": F.refs(node)])])
        let outcome = state.applying([F.change(root, "Canvas", ["shapes": F.refs(node)])], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.wrongClass])
    }

    @Test("16: an add fragment carries every property; references as lowercase UUIDs")
    func addFragmentCarriesAll() throws {
        let root = F.uuid(0xABC)
        let (p, c1, c2) = (F.uuid(0xA1), F.uuid(0xA2), F.uuid(0xA3))
        let state = ScopeState(rootUUID: root, rootClass: F.modelClass("Person"))
        let applied = try #require(
            state.applying(
                [
                    F.add(p, "Person"), F.add(c1, "Person"), F.add(c2, "Person"),
                    F.change(
                        root, "Person",
                        [
                            "name": "Sam", "age": 28, "nicknames": ["S", "Sammy"],
                            "partner": .string(p.uuidString.uppercased()), "children": F.refs(c1, c2),
                        ]),
                ], schema: F.schema
            ).applied)
        let exported = applied.state.exportFragments()
        #expect(exported[0].type == .change)
        #expect(exported[0].properties.keys == F.modelClass("Person").properties.map(\.name))
        #expect(exported[0].properties["partner"] == .string(p.wireString))
        #expect(exported[0].properties["children"] == F.refs(c1, c2))
        #expect(exported[1].type == .add && exported[1].clsName == "Person")
        #expect(applied.fragments[3].properties["partner"] == .string(p.wireString))
    }

    @Test("17: parent relationships are deduplicated per (parent, key) and follow changes")
    func parentRelationships() throws {
        let rider = F.uuid(1)
        let (d, d2, other) = (F.uuid(2), F.uuid(3), F.uuid(4))
        var state = ScopeState(rootUUID: rider, rootClass: F.modelClass("Person"))
        state = try F.accept(
            state,
            [
                F.add(d, "Person"), F.add(d2, "Person"), F.add(other, "Person", ["currentDriver": F.ref(d)]),
                F.change(
                    rider, "Person",
                    ["currentDriver": F.ref(d), "lastThreeDrivers": F.refs(d, d, d2), "children": F.refs(other)]),
            ])
        let expected = [
            ParentReference(uuid: rider, key: "currentDriver"), ParentReference(uuid: rider, key: "lastThreeDrivers"),
            ParentReference(uuid: other, key: "currentDriver"),
        ].sorted { ($0.uuid.wireString, $0.key) < ($1.uuid.wireString, $1.key) }
        #expect(state.parents(of: d) == expected)
        state = try F.accept(
            state, [F.change(rider, "Person", ["currentDriver": nil, "lastThreeDrivers": F.refs(d2)])])
        #expect(state.parents(of: d) == [ParentReference(uuid: other, key: "currentDriver")])
        #expect(state.contains(d))
    }

    @Test("a duplicated collection entry keeps its object until the last copy is dropped")
    func duplicateEntries() throws {
        let (state, root, shapes) = try F.canvas(shapes: 1)
        let s = shapes[0]
        var next = try F.accept(state, [F.change(root, "Canvas", ["shapes": F.refs(s, s)])])
        next = try F.accept(next, [F.change(root, "Canvas", ["shapes": F.refs(s)])])
        #expect(next.contains(s))
        let applied = try #require(
            next.applying([F.change(root, "Canvas", ["shapes": []])], schema: F.schema).applied)
        #expect(applied.removed == [s])
    }
}
