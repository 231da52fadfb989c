import Foundation
import Jetstream
import JetstreamModel
import Testing

/// The typed framework records collection edits as operations objects (docs/sync-protocol.md, L3:
/// collections are sent as operations, never as whole arrays) and applies received ones.
@Suite struct CollectionOperationRecordingTests {
    private func wire(_ object: ModelObject) -> JSONValue { .string(object.uuid.uuidString.lowercased()) }

    /// A root with `count` children in `array`, already synced (nothing pending).
    private func rootWithChildren(_ count: Int) -> (root: TestModel, scope: Scope, children: [TestModel]) {
        let root = TestModel()
        let children = (0..<count).map { _ in TestModel() }
        root.array = children
        return (root, Scope(root: root), children)
    }

    @Test func appendIsAnInsertAtTheEnd() throws {
        let (root, scope, _) = rootWithChildren(2)
        let log = ChangeLog(scope)
        let added = TestModel()
        scope.modify { root.array.append(added) }
        let fragments = log.take()
        #expect(fragments.map(\.summary) == ["add TestModel", "change TestModel"])
        #expect(fragments[1].properties["array"] == ["insert": [wire(added)], "before": nil])
    }

    @Test func insertIsAnchoredOnTheNextElement() throws {
        let (root, scope, children) = rootWithChildren(3)
        let log = ChangeLog(scope)
        let added = TestModel()
        scope.modify { root.array.insert(added, at: 1) }
        let change = try #require(log.take().first { $0.type == .change })
        #expect(change.properties["array"] == ["insert": [wire(added)], "before": wire(children[1])])
    }

    @Test func removingAndDeletingAreRemoves() throws {
        let (root, scope, children) = rootWithChildren(3)
        let log = ChangeLog(scope)
        scope.modify { root.array.remove(at: 0) }
        #expect(log.take().map { $0.properties["array"] } == [["remove": [wire(children[0])]]])
        scope.modify { children[2].detach() }
        #expect(log.take().map { $0.properties["array"] } == [["remove": [wire(children[2])]]])
        #expect(root.array == [children[1]])
    }

    @Test func aMoveIsAnInsertOfThePresentElement() throws {
        let (root, scope, children) = rootWithChildren(4)
        let log = ChangeLog(scope)
        scope.modify {
            let moved = root.array.remove(at: 3)
            root.array.insert(moved, at: 1)
        }
        #expect(
            log.take().map { $0.properties["array"] } == [["insert": [wire(children[3])], "before": wire(children[1])]])
    }

    @Test func insertThenRemoveInOneBatchLeavesNothing() throws {
        let (root, scope, _) = rootWithChildren(2)
        let log = ChangeLog(scope)
        let added = TestModel()
        let changeSet = scope.modify {
            root.array.append(added)
            root.array.removeLast()
            root.tags.append("a")
            root.tags.removeAll()
        }
        #expect(changeSet == nil)
        #expect(log.take().isEmpty)
        // Another key of the same object still goes; the collection that came back does not.
        scope.modify {
            root.array.insert(added, at: 0)
            root.integer = 3
            root.array.remove(at: 0)
        }
        let fragments = log.take()
        #expect(fragments.map(\.summary) == ["change TestModel"])
        #expect(fragments.first?.properties.keys == ["integer"])
    }

    @Test func editsAtSeveralPlacesAreOneChangeWithOneOperationsObject() throws {
        let (root, scope, children) = rootWithChildren(8)
        let log = ChangeLog(scope)
        let (first, second) = (TestModel(), TestModel())
        scope.modify {
            root.array.insert(first, at: 1)
            root.array.insert(second, at: 3)
            root.array.removeFirst()
        }
        let changes = log.take().filter { $0.type == .change }
        #expect(changes.map { $0.uuid } == [root.uuid])
        #expect(
            changes.map { $0.properties["array"] } == [
                [
                    "remove": [wire(children[0])], "insert": [wire(first), wire(children[1]), wire(second)],
                    "before": wire(children[2]),
                ]
            ])
    }

    @Test func primitiveCollectionsAreOperationsToo() throws {
        let model = TestModel()
        model.tags = ["a", "b", "c"]
        model.numbers = [1, 2.5]
        let scope = Scope(root: model)
        let log = ChangeLog(scope)
        scope.modify {
            model.tags.remove(at: 1)
            model.tags.insert("z", at: 0)
            model.numbers.append(4)
        }
        let properties = try #require(log.take().first?.properties)
        #expect(properties["tags"] == ["remove": ["b"], "insert": ["z"], "before": "a"])
        #expect(properties["numbers"] == ["insert": [4.0], "before": nil])
    }

    @Test func aResultWithDuplicatesIsSentWhole() throws {
        let (root, scope, children) = rootWithChildren(1)
        let log = ChangeLog(scope)
        scope.modify { root.array.append(children[0]) }
        #expect(log.take().first?.properties["array"] == [wire(children[0]), wire(children[0])])
    }

    @Test func twoWritersAppendingAtOnceBothKeepTheirElement() throws {
        let (root, scope, children) = rootWithChildren(2)
        var server = try scope.currentState()
        let other = Scope(root: TestModel(uuid: root.uuid))
        try other.applyFullState(server.exportFragments(), rootUUID: root.uuid)
        let otherRoot = try #require(other.root as? TestModel)
        let mine = TestModel()
        let theirs = TestModel()
        let myChanges = try #require(scope.modify { root.array.append(mine) })
        let theirChanges = try #require(other.modify { otherRoot.array.insert(theirs, at: 0) })
        for fragments in [theirChanges.fragments, myChanges.fragments] {
            server = try #require(server.applying(fragments, schema: try scope.schema()).applied).state
        }
        let final = try #require(server.object(root.uuid)?["array"]?.referencedUUIDs)
        #expect(final == [theirs.uuid, children[0].uuid, children[1].uuid, mine.uuid])
    }

    @Test func receivedOperationsUpdateTheModelAndFireCollectionObservers() throws {
        let (root, scope, children) = rootWithChildren(3)
        let log = ChangeLog(scope)
        let observer = Counter()
        var added: [TestModel] = []
        var removed: [TestModel] = []
        root.observeCollectionAdd(observer, key: "array") { (child: TestModel) in added.append(child) }
        root.observeCollectionRemove(observer, key: "array") { (child: TestModel) in removed.append(child) }
        let queued = Counter()
        root.observeChange(queued, key: "array") { queued.increment() }
        let newUUID = UUID()
        let change = SyncFragment(
            type: .change, uuid: root.uuid, clsName: "TestModel",
            properties: [
                "array": [
                    "remove": [wire(children[0])], "insert": [.string(newUUID.uuidString)], "before": wire(children[2]),
                ]
            ])
        let applied = try scope.applySyncFragments([
            change, SyncFragment(type: .add, uuid: newUUID, clsName: "TestModel", properties: ["integer": 7]),
        ])
        #expect(root.array.map(\.uuid) == [children[1].uuid, newUUID, children[2].uuid])
        #expect(root.array[1].integer == 7)
        #expect(added.map(\.uuid) == [newUUID])
        #expect(removed == [children[0]])
        #expect(children[0].scope == nil)
        #expect(queued.count == 1)
        #expect(log.take().isEmpty)
        #expect(applied.fragments[0].properties["array"]?.array?.count == 3)
        // A move received as an operation moves the element; observers see no add or remove.
        try scope.applySyncFragments([
            SyncFragment(
                type: .change, uuid: root.uuid, clsName: "TestModel",
                properties: ["array": ["insert": [wire(children[2])], "before": wire(children[1])]])
        ])
        #expect(root.array.map(\.uuid) == [children[2].uuid, children[1].uuid, newUUID])
        #expect(added.count == 1 && removed.count == 1)
    }
}
