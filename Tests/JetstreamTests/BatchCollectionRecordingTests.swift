import Foundation
import Jetstream
import JetstreamModel
import Testing

/// A batch records one fragment per changed object and one value per changed collection: one
/// operations object however many places the batch edited, or the whole array when that is shorter
/// or the only way (docs/jetstream-framework.md, "Recording changes").
@Suite struct BatchCollectionRecordingTests {
    /// Inserts at 3 places, removes at 2 and moves 1 element of `values`, all inside 400..<600.
    private static func editAtSixPlaces<Element: Equatable>(_ values: inout [Element], inserting new: [Element]) {
        values.insert(new[0], at: 400)
        values.remove(at: 420)
        values.insert(new[1], at: 450)
        let moved = values.remove(at: 590)
        values.insert(moved, at: 410)
        values.insert(new[2], at: 550)
        values.remove(at: 580)
    }

    @Test func sixEditsOfAThousandStringsAreOneOperationsObject() throws {
        let root = TestModel()
        root.tags = (0..<1000).map { "t\($0)" }
        let scope = Scope(root: root)
        let before = try scope.currentState()
        var expected = root.tags
        Self.editAtSixPlaces(&expected, inserting: ["n1", "n2", "n3"])

        let changeSet = try #require(scope.modify { Self.editAtSixPlaces(&root.tags, inserting: ["n1", "n2", "n3"]) })

        #expect(root.tags == expected)
        #expect(changeSet.fragments.map(\.summary) == ["change TestModel"])
        let fragment = try #require(changeSet.fragments.first)
        #expect(fragment.properties.keys == ["tags"])
        let operation = try #require(fragment.properties["tags"]?.object, "an operations object, not an array")
        #expect(operation.keys == ["remove", "insert", "before"])
        #expect(operation["insert"]?.array?.count ?? 1000 < 250, "the edited span, not the collection")
        let after = try #require(before.applying(changeSet.fragments, schema: try scope.schema()).applied).state
        #expect(after.object(root.uuid)?["tags"] == .list(expected.map(Value.string)))
    }

    @Test func sixEditsOfAThousandChildrenAreOneChangeOfTheParent() throws {
        let root = TestModel()
        root.array = (0..<1000).map { _ in TestModel() }
        let scope = Scope(root: root)
        let before = try scope.currentState()
        let added = [TestModel(), TestModel(), TestModel()]

        // A run-loop batch: edits outside modify, delivered by the next flush.
        let log = ChangeLog(scope)
        Self.editAtSixPlaces(&root.array, inserting: added)
        scope.flush()

        let fragments = log.take()
        let changes = fragments.filter { $0.type == .change }
        #expect(changes.map(\.uuid) == [root.uuid])
        #expect(Set(fragments.filter { $0.type == .add }.map(\.uuid)) == Set(added.map(\.uuid)))
        let operation = try #require(changes.first?.properties["array"]?.object, "an operations object")
        #expect(operation["remove"]?.array?.count == 2)
        let after = try #require(before.applying(fragments, schema: try scope.schema()).applied).state
        #expect(after.object(root.uuid)?["array"]?.referencedUUIDs == root.array.map(\.uuid))
    }

    @Test func aSmallCollectionRewrittenIsStillOneOperationsObject() throws {
        let root = TestModel()
        root.tags = ["a", "b", "c"]
        let scope = Scope(root: root)
        let before = try scope.currentState()
        let changeSet = try #require(
            scope.modify {
                root.tags.insert("x", at: 1)
                root.tags.append("y")
                root.tags.removeFirst()
            })
        // Longer than the whole array, but a whole array would erase what another writer inserted
        // meanwhile: a client always writes an operations object (docs/sync-protocol.md, L3).
        #expect(
            changeSet.fragments.map { $0.properties["tags"] } == [
                ["remove": ["a"], "insert": ["x", "b", "c", "y"], "before": nil]
            ])
        let after = try #require(before.applying(changeSet.fragments, schema: try scope.schema()).applied).state
        #expect(after.object(root.uuid)?["tags"] == .list(["x", "b", "c", "y"].map(Value.string)))
    }

    @Test func aCollectionEndingWithADuplicateGoesWholeBesideAnotherOnesOperations() throws {
        let root = TestModel()
        root.tags = (0..<100).map { "t\($0)" }
        root.numbers = (0..<100).map(Double.init)
        let scope = Scope(root: root)
        let before = try scope.currentState()
        let changeSet = try #require(
            scope.modify {
                root.tags.insert("n", at: 10)
                root.tags.insert("t50", at: 90)
                root.numbers.insert(-1, at: 10)
                root.numbers.insert(-2, at: 90)
            })
        #expect(changeSet.fragments.count == 1)
        let properties = try #require(changeSet.fragments.first?.properties)
        #expect(properties["tags"] == .array(root.tags.map(JSONValue.string)))
        #expect(properties["numbers"]?.object != nil)
        let after = try #require(before.applying(changeSet.fragments, schema: try scope.schema()).applied).state
        #expect(after.object(root.uuid)?["tags"] == .list(root.tags.map(Value.string)))
        #expect(after.object(root.uuid)?["numbers"] == .list(root.numbers.map(Value.double)))
    }

    @Test func everyCollectionOfAnObjectIsOneValueOfOneFragment() throws {
        let root = TestModel()
        root.tags = (0..<50).map { "t\($0)" }
        root.numbers = (0..<50).map(Double.init)
        let scope = Scope(root: root)
        let before = try scope.currentState()
        let changeSet = try #require(
            scope.modify {
                root.tags.insert("n1", at: 5)
                root.numbers.remove(at: 10)
                root.tags.insert("n2", at: 40)
                root.integer = 7
                root.numbers.insert(-1, at: 30)
                root.tags.remove(at: 20)
            })
        #expect(changeSet.fragments.count == 1)
        let properties = try #require(changeSet.fragments.first?.properties)
        #expect(properties.keys == ["tags", "numbers", "integer"])
        #expect(properties["tags"]?.object != nil && properties["numbers"]?.object != nil)
        let after = try #require(before.applying(changeSet.fragments, schema: try scope.schema()).applied).state
        #expect(after.object(root.uuid)?["tags"] == .list(root.tags.map(Value.string)))
        #expect(after.object(root.uuid)?["numbers"] == .list(root.numbers.map(Value.double)))
        #expect(after.object(root.uuid)?["integer"] == .int(7))
    }
}
