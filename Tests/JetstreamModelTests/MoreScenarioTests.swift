import Foundation
import JetstreamModel
import Testing

/// Scenario 15 (the original server's lenient setters) and reachability corner cases.
@Suite("Setter strictness and reachability corners")
struct MoreScenarioTests {
    typealias F = Fixtures

    @Test("15 (differs): values the original coerced are type-mismatch here")
    func noCoercion() throws {
        let root = F.uuid(1)
        let state = ScopeState(rootUUID: root, rootClass: F.modelClass("TestModel"))
        let outcome = state.applying(
            [
                F.change(root, "TestModel", ["double64": "notanumber"]),
                F.change(root, "TestModel", ["integer": "5"]),
                F.change(root, "TestModel", ["string": ["a": 1]]),
                F.change(root, "TestModel", ["boolean": "word"]),
                F.change(root, "TestModel", ["date": "1999/12/31"]),
                F.change(root, "TestModel", ["scores": ["notanumber"]]),
                F.change(root, "TestModel", ["tags": 1]),
                F.change(root, "TestModel", ["childModel": 12]),
            ], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == Array(repeating: .typeMismatch, count: 8))
    }

    @Test("an add attached only under an object the same set detaches is unattached-add")
    func addUnderRemovedParent() throws {
        let root = F.uuid(1)
        let node = F.uuid(2)
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [F.add(node, "Node"), F.change(root, "Canvas", ["children": F.refs(node)])])
        let added = F.uuid(3)
        let outcome = state.applying(
            [
                F.add(added, "Node"), F.change(node, "Node", ["children": F.refs(added)]),
                F.change(root, "Canvas", ["children": []]),
            ], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.unattachedAdd, nil, nil])
    }

    @Test("an object with many parents (beyond the small inline set) stays until its last parent goes")
    func manyParents() throws {
        let root = F.uuid(1)
        let driver = F.uuid(2)
        let riders = (0..<40).map { F.uuid(100 + $0) }
        var fragments = [F.add(driver, "Person")]
        fragments += riders.map { F.add($0, "Person", ["currentDriver": F.ref(driver)]) }
        fragments.append(F.change(root, "Person", ["children": .array(riders.map(F.ref))]))
        var state = try F.accept(ScopeState(rootUUID: root, rootClass: F.modelClass("Person")), fragments)
        #expect(state.parents(of: driver).count == 40)
        state = try F.accept(state, [F.change(root, "Person", ["children": .array(riders.suffix(1).map(F.ref))])])
        #expect(state.contains(driver))
        #expect(state.parents(of: driver) == [ParentReference(uuid: riders[39], key: "currentDriver")])
        let copy = try ScopeState(
            importing: state.exportFragments(), rootUUID: root, version: state.version, schema: F.schema)
        #expect(copy == state)
        let applied = try #require(
            state.applying([F.change(root, "Person", ["children": []])], schema: F.schema).applied)
        #expect(Set(applied.removed) == [driver, riders[39]])
        #expect(applied.state.count == 1)
    }

    @Test("a deep chain is removed in one set without recursion limits")
    func deepChain() throws {
        let root = F.uuid(1)
        let chain = (0..<3000).map { F.uuid(10 + $0) }
        var fragments = chain.indices.map { index in
            F.add(chain[index], "Node", index + 1 < chain.count ? ["children": F.refs(chain[index + 1])] : [:])
        }
        fragments.append(F.change(root, "Canvas", ["children": F.refs(chain[0])]))
        let state = try #require(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas"))
                .applying(ChangeSet(fragments: fragments), schema: F.schema, limits: Limits(maxFragmentsPerSet: 5000))
                .applied?.state)
        #expect(state.preOrderUUIDs().count == 3001)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["children": []])], schema: F.schema).applied)
        #expect(applied.removed.count == 3000)
    }
}
