import Foundation
import JetstreamModel
import Testing

/// Full state (the original's iOS StateMessageTests): export in pre-order, import into an empty scope.
@Suite("Full state")
struct FullStateTests {
    typealias F = Fixtures
    let root = F.uuid(1)
    let child = F.uuid(2)

    func importState(_ fragments: [SyncFragment]) throws -> ScopeState {
        try ScopeState(importing: fragments, rootUUID: root, version: 5, schema: F.schema)
    }

    @Test("40: a state with the root as change and its child as add is imported")
    func initialState() throws {
        let state = try importState([
            F.change(root, "TestModel", ["string": "root", "childModel": F.ref(child)]),
            F.add(child, "TestModel", ["string": "ok"]),
        ])
        #expect(state.rootUUID == root)
        #expect(state.version == 5)
        #expect(state.count == 2)
        #expect(state.object(child)?["string"] == .string("ok"))
        #expect(state.parents(of: child) == [ParentReference(uuid: root, key: "childModel")])
    }

    @Test("41: importing an export gives an equal state, byte for byte")
    func reimport() throws {
        let state = try importState([
            F.change(root, "TestModel", ["string": "root", "childModel": F.ref(child)]),
            F.add(child, "TestModel", ["string": "ok"]),
        ])
        let again = try importState(state.exportFragments())
        #expect(again == state)
        #expect(again.stateJSON(name: "test-1").encoded() == state.stateJSON(name: "test-1").encoded())
    }

    @Test("42: missing objects are gone and missing keys fall back to defaults")
    func missingChild() throws {
        let state = try importState([F.change(root, "TestModel", ["string": "root"])])
        #expect(state.count == 1)
        #expect(state.root["childModel"] == .null)
        #expect(state.root["integer"] == .int(0))
    }

    @Test("43: a state that moves the child from childModel to childModel2")
    func movedChild() throws {
        let state = try importState([
            F.change(root, "TestModel", ["childModel2": F.ref(child)]), F.add(child, "TestModel"),
        ])
        #expect(state.root["childModel"] == .null)
        #expect(state.root["childModel2"] == .reference(child))
        #expect(state.count == 2)
    }

    @Test("44: dependent-first order is fine (adds are created before properties apply)")
    func dependentFirst() throws {
        let (c1, c2) = (F.uuid(3), F.uuid(4))
        let state = try importState([
            F.add(c2, "TestModel"), F.add(c1, "TestModel", ["childModel": F.ref(c2)]),
            F.change(root, "TestModel", ["childModel2": F.ref(c1)]),
        ])
        #expect(state.root["childModel2"] == .reference(c1))
        #expect(state.object(c1)?["childModel"] == .reference(c2))
        #expect(state.count == 3)
    }

    @Test("export is pre-order from the root, root as change, each object once (shared and cyclic)")
    func preOrder() throws {
        let (a, b, c, d) = (F.uuid(10), F.uuid(11), F.uuid(12), F.uuid(13))
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.add(a, "Node", ["children": F.refs(c)]), F.add(b, "Node", ["children": F.refs(c, d)]),
                F.add(c, "Node", ["partner": F.ref(a)]), F.add(d, "Node"),
                F.change(root, "Canvas", ["children": F.refs(a, b)]),
            ])
        let exported = state.exportFragments()
        #expect(exported.map(\.uuid) == [root, a, c, b, d])
        #expect(exported.map(\.type) == [.change, .add, .add, .add, .add])
        #expect(exported[1].properties.keys == ["name", "children", "partner"])
        let again = try ScopeState(importing: exported, rootUUID: root, version: state.version, schema: F.schema)
        #expect(again == state)
    }

    @Test("an import with a change for a non-root or an unreachable add is refused")
    func invalidImports() throws {
        #expect(throws: StateImportError.self) {
            try importState([F.change(root, "TestModel", [:]), F.change(child, "TestModel", [:])])
        }
        #expect(throws: StateImportError.self) {
            try importState([F.change(root, "TestModel", [:]), F.add(child, "TestModel")])
        }
        #expect(throws: StateImportError.self) { try importState([F.add(child, "TestModel")]) }
    }

    @Test("objectJSON lists the object's properties and parents")
    func objectJSON() throws {
        let state = try importState([
            F.change(root, "TestModel", ["childModel": F.ref(child), "array": F.refs(child, child)]),
            F.add(child, "TestModel"),
        ])
        let json = try #require(state.objectJSON(child))
        #expect(json["clsName"] == "TestModel")
        #expect(json["uuid"] == .string(child.wireString))
        #expect(json["properties"]?.object?.count == F.modelClass("TestModel").properties.count)
        #expect(
            json["parents"]
                == [
                    ["uuid": .string(root.wireString), "key": "array"],
                    ["uuid": .string(root.wireString), "key": "childModel"],
                ])
    }
}
