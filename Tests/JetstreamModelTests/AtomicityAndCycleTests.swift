import Foundation
import JetstreamModel
import Testing

/// Where we deliberately go beyond the original: all-or-nothing sets, unreachable cycles collected,
/// every bad fragment reported, limits.
@Suite("Atomicity, reachability and limits")
struct AtomicityAndCycleTests {
    typealias F = Fixtures

    @Test("a rejected set leaves the state unchanged, byte for byte, even after earlier good fragments")
    func atomic() throws {
        let (state, root, shapes) = try F.canvas(shapes: 3)
        let before = state.stateJSON(name: "canvas-1").encoded()
        let outcome = state.applying(
            [
                F.change(root, "Canvas", ["shapes": F.refs(shapes[0]), "name": "gone"]),
                F.add(F.uuid(90), "Shape"),
                F.change(shapes[0], "Shape", ["width": -1]),
            ], schema: F.schema)
        // Reachability (and so unattached-add) is judged only once every fragment applied cleanly.
        #expect(F.rejectionKinds(outcome) == [nil, nil, .outOfRange])
        #expect(state.stateJSON(name: "canvas-1").encoded() == before)
        #expect(state.count == 4)
    }

    @Test("an unreachable cycle leaves the scope (the original leaked it)")
    func cycleCollected() throws {
        let root = F.uuid(1)
        let (a, b) = (F.uuid(2), F.uuid(3))
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.add(a, "Node", ["partner": F.ref(b)]), F.add(b, "Node", ["partner": F.ref(a)]),
                F.change(root, "Canvas", ["children": F.refs(a)]),
            ])
        #expect(state.count == 3)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["children": []])], schema: F.schema).applied)
        #expect(Set(applied.removed) == [a, b])
        #expect(applied.state.count == 1)
    }

    @Test("an object with another reachable parent stays; shared children survive a detach (iOS gap 22b)")
    func sharedChildStays() throws {
        let root = F.uuid(1)
        let (a, b, c) = (F.uuid(2), F.uuid(3), F.uuid(4))
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.add(a, "Node", ["children": F.refs(c)]), F.add(b, "Node", ["children": F.refs(c)]),
                F.add(c, "Node"), F.change(root, "Canvas", ["children": F.refs(a, b)]),
            ])
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["children": F.refs(b)])], schema: F.schema).applied)
        #expect(applied.removed == [a])
        #expect(applied.state.parents(of: c) == [ParentReference(uuid: b, key: "children")])
    }

    @Test("a move within one set removes nothing")
    func move() throws {
        let root = F.uuid(1)
        let (a, b, c) = (F.uuid(2), F.uuid(3), F.uuid(4))
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.add(a, "Node", ["children": F.refs(c)]), F.add(b, "Node"), F.add(c, "Node"),
                F.change(root, "Canvas", ["children": F.refs(a, b)]),
            ])
        let applied = try #require(
            state.applying(
                [F.change(a, "Node", ["children": []]), F.change(b, "Node", ["children": F.refs(c)])],
                schema: F.schema
            ).applied)
        #expect(applied.removed.isEmpty)
        #expect(applied.state.parents(of: c) == [ParentReference(uuid: b, key: "children")])
    }

    @Test("a cycle through the root keeps everything; a self-reference is a cycle too")
    func cyclesThroughRoot() throws {
        let root = F.uuid(1)
        let a = F.uuid(2)
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Person")),
            [F.add(a, "Person", ["partner": F.ref(root)]), F.change(root, "Person", ["children": F.refs(a)])])
        let selfLoop = try F.accept(state, [F.change(a, "Person", ["currentDriver": F.ref(a)])])
        let applied = try #require(
            selfLoop.applying([F.change(root, "Person", ["children": []])], schema: F.schema).applied)
        #expect(applied.removed == [a])
        #expect(applied.state.parents(of: root).isEmpty)
    }

    @Test("every bad fragment gets its own error, the good ones {}")
    func everyError() throws {
        let (state, root, shapes) = try F.canvas(shapes: 1)
        let outcome = state.applying(
            ChangeSet(json: [
                ["type": "remove", "uuid": .string(root.wireString), "clsName": "Canvas"],
                .object(F.change(root, "Canvas", ["name": "ok"]).jsonValue.object!),
                .object(F.change(shapes[0], "Canvas", ["name": "x"]).jsonValue.object!),
                .object(
                    F.change(shapes[0], "Shape", ["label": .string(String(repeating: "a", count: 201))]).jsonValue
                        .object!),
                .object(F.change(shapes[0], "Shape", ["kind": "hexagon"]).jsonValue.object!),
                .object(F.change(shapes[0], "Shape", ["color": 0x1_0000_0000]).jsonValue.object!),
            ]), schema: F.schema)
        #expect(
            F.rejectionKinds(outcome) == [
                .malformedFragment, nil, .classMismatch, .constraintViolation, .constraintViolation, .outOfRange,
            ])
    }

    @Test("limits: objects per scope, fragments per set, string and collection length")
    func limits() throws {
        let (state, root, shapes) = try F.canvas(shapes: 2)
        let (n1, n2) = (F.uuid(80), F.uuid(81))
        let adds = [
            F.add(n1, "Shape"), F.add(n2, "Shape"),
            F.change(root, "Canvas", ["shapes": F.refs(shapes[0], shapes[1], n1, n2)]),
        ]
        var limits = Limits(maxObjectsPerScope: 4)
        #expect(
            F.rejectionKinds(state.applying(ChangeSet(fragments: adds), schema: F.schema, limits: limits)) == [
                nil, .limitExceeded, nil,
            ])
        limits = Limits(maxFragmentsPerSet: 2)
        #expect(
            F.rejectionKinds(state.applying(ChangeSet(fragments: adds), schema: F.schema, limits: limits)) == [
                nil, nil, .limitExceeded,
            ])
        limits = Limits(maxStringLength: 3, maxCollectionLength: 1)
        let outcome = state.applying(
            ChangeSet(fragments: [
                F.change(root, "Canvas", ["name": "four"]),
                F.change(root, "Canvas", ["shapes": F.refs(shapes[0], shapes[1])]),
            ]), schema: F.schema, limits: limits)
        #expect(F.rejectionKinds(outcome) == [.limitExceeded, .limitExceeded])
        // The limit counts the scope after removals: two shapes out, one in, fits in 2 objects.
        let swap = [F.add(n1, "Shape"), F.change(root, "Canvas", ["shapes": F.refs(n1)])]
        let applied = try #require(
            state.applying(ChangeSet(fragments: swap), schema: F.schema, limits: Limits(maxObjectsPerScope: 2))
                .applied)
        #expect(applied.state.count == 2)
    }

    @Test("normalised fragments: schema order, lowercase UUIDs, canonical numbers, adds with every property")
    func normalised() throws {
        let (state, root, _) = try F.canvas(shapes: 0)
        let s = F.uuid(0xBEEF)
        let applied = try #require(
            state.applying(
                [
                    F.add(s, "Shape", ["y": 2, "x": 1.50]),
                    F.change(root, "Canvas", ["shapes": .array([.string(s.uuidString.uppercased())]), "name": "n"]),
                ], schema: F.schema
            ).applied)
        var writer = JSONWriter()
        for fragment in applied.fragments { fragment.write(to: &writer) }
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(
            text == #"{"type":"add","uuid":"00000000-0000-0000-0000-00000000beef","clsName":"Shape","properties":"#
                + #"{"x":1.5,"y":2.0,"width":100.0,"height":100.0,"color":null,"label":"","kind":"rect"}}"#
                + #"{"type":"change","uuid":"00000000-0000-0000-0000-000000000001","clsName":"Canvas","properties":"#
                + #"{"name":"n","shapes":["00000000-0000-0000-0000-00000000beef"]}}"#)
        #expect(applied.state.version == state.version + 1)
    }
}
