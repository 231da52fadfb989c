import Foundation
import JetstreamModel
import Testing

/// The original clients' fragment-application scenarios (its iOS and JS client tests) against the iOS TestModel. Where the original
/// iOS client converted or ignored bad values silently, we reject the set (docs/model.md,
/// "Strictness decisions").
@Suite("Client scenarios of the original")
struct ClientScenarioTests {
    typealias F = Fixtures

    /// root (TestModel) → childModel = child, at version 1.
    func rootWithChild() throws -> (state: ScopeState, root: UUID, child: UUID) {
        let root = F.uuid(1)
        let child = F.uuid(2)
        let state = try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("TestModel")),
            [
                F.add(child, "TestModel", ["integer": 10, "float32": 10, "int32": 10]),
                F.change(root, "TestModel", ["childModel": F.ref(child)]),
            ])
        return (state, root, child)
    }

    @Test("34: an add referenced by a change becomes the child's childModel")
    func addToChild() throws {
        let (state, _, child) = try rootWithChild()
        let u = F.uuid(3)
        let next = try F.accept(
            state,
            [
                F.add(u, "TestModel", ["string": "set correctly"]),
                F.change(child, "TestModel", ["childModel": F.ref(u)]),
            ]
        )
        #expect(next.object(child)?["childModel"] == .reference(u))
        #expect(next.object(u)?["string"] == .string("set correctly"))
        #expect(next.parents(of: u) == [ParentReference(uuid: child, key: "childModel")])
        #expect(next.count == 3)
    }

    @Test("34b: the same through an array")
    func addToArray() throws {
        let (state, _, child) = try rootWithChild()
        let u = F.uuid(3)
        let next = try F.accept(
            state, [F.add(u, "TestModel", ["string": "ok"]), F.change(child, "TestModel", ["array": F.refs(u)])])
        #expect(next.object(child)?["array"] == .references([u]))
        #expect(next.count == 3)
    }

    @Test("35: a change sets the given values")
    func change() throws {
        let (state, _, child) = try rootWithChild()
        let next = try F.accept(state, [F.change(child, "TestModel", ["string": "testing", "integer": 20])])
        #expect(next.object(child)?["string"] == .string("testing"))
        #expect(next.object(child)?["integer"] == .int(20))
        #expect(next.version == state.version + 1)
    }

    @Test("36 (differs): null for a non-optional value is null-not-allowed, not silently ignored")
    func nullValues() throws {
        let (state, _, child) = try rootWithChild()
        let outcome = state.applying(
            [
                F.change(child, "TestModel", ["string": nil]),
                F.change(child, "TestModel", ["integer": nil]),
                F.change(child, "TestModel", ["float32": nil]),
                F.change(child, "TestModel", ["array": nil]),
            ], schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [nil, .nullNotAllowed, .nullNotAllowed, .nullNotAllowed])
        let accepted = try F.accept(state, [F.change(child, "TestModel", ["string": nil, "date": nil])])
        #expect(accepted.object(child)?["string"] == .null)
        #expect(accepted.object(child)?["integer"] == .int(10))
    }

    @Test("37 (differs): wrong JSON types are rejected, not converted; each bad fragment gets its error")
    func invalidValues() throws {
        let (state, _, child) = try rootWithChild()
        let outcome = state.applying(
            [
                F.change(child, "TestModel", ["string": 10]),
                F.change(child, "TestModel", ["integer": "5"]),
                F.change(child, "TestModel", ["float32": "whatever"]),
                F.change(child, "TestModel", ["int32": 5.5]),
            ], schema: F.schema)
        guard case .rejected(let replies) = outcome else {
            Issue.record("expected rejection")
            return
        }
        #expect(replies.map { $0.error?.kind } == Array(repeating: .typeMismatch, count: 4))
        #expect(replies.map { $0.error?.property } == ["string", "integer", "float32", "int32"])
        #expect(state.object(child)?["int32"] == .int(10))
    }

    @Test("39: invalid date and number are not applied; null for optional values is")
    func dateValidation() throws {
        let (state, _, child) = try rootWithChild()
        let outcome = state.applying(
            [F.change(child, "TestModel", ["date": "test"]), F.change(child, "TestModel", ["double64": "test"])],
            schema: F.schema)
        #expect(F.rejectionKinds(outcome) == [.typeMismatch, .typeMismatch])
        let next = try F.accept(state, [F.change(child, "TestModel", ["date": 100.5, "color": nil])])
        #expect(next.object(child)?["date"] == .double(100.5))
    }

    @Test("45: enum, Color and Date values keep their wire meaning")
    func modelValueTypes() throws {
        let (state, _, child) = try rootWithChild()
        let next = try F.accept(
            state, [F.change(child, "TestModel", ["testType": 1, "color": 0xFF10_8040, "date": 100.0])])
        let object = try #require(next.object(child))
        #expect(object["testType"] == .int(1))
        #expect(object["color"] == .uint(0xFF10_8040))
        #expect(object["date"] == .double(100))
        #expect(object.propertiesJSON["color"]?.encodedString() == "4279271488")
        #expect(object.propertiesJSON["date"]?.encodedString() == "100.0")
        let bad = state.applying([F.change(child, "TestModel", ["testType": 7])], schema: F.schema)
        #expect(F.rejectionKinds(bad) == [.constraintViolation])
    }
}
