import Foundation
import Jetstream
import JetstreamModel
import Testing

@Suite struct ChangeRecordingTests {
    /// Scenario 46: fragment order and what gets recorded after detaching.
    @Test func recordsAddsAndChangesInFirstTouchOrder() {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let log = ChangeLog(scope)
        scope.flush()
        #expect(log.take().isEmpty)

        let child = TestModel()
        let child2 = TestModel()
        parent.childModel = child
        child.childModel = child2
        scope.flush()
        let fragments = log.take()
        #expect(fragments.map(\.summary) == ["add TestModel", "change TestModel", "add TestModel"])
        #expect(fragments.map(\.uuid) == [child.uuid, parent.uuid, child2.uuid])
        scope.flush()
        #expect(log.take().isEmpty)

        child.string = "changed"
        scope.flush()
        let change = log.take()
        #expect(change.map(\.summary) == ["change TestModel"])
        #expect(change.first?.properties.keys == ["string"])

        parent.childModel = nil
        scope.flush()
        let removal = log.take()
        #expect(removal.count == 1)
        #expect(removal.first?.uuid == parent.uuid)
        #expect(removal.first?.properties["childModel"] == .null)

        child.string = "after detach"
        scope.flush()
        #expect(log.take().isEmpty)
    }

    /// Scenario 47: add then change → adds only; change then detach → only the parent change;
    /// add then detach → only the parent change.
    @Test func coalescing() {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let log = ChangeLog(scope)
        let child = TestModel()
        let child2 = TestModel()
        scope.modify {
            parent.childModel = child
            child.childModel2 = child2
            child.string = "new"
            child2.integer = 3
        }
        let added = log.take()
        #expect(added.map(\.summary) == ["add TestModel", "change TestModel", "add TestModel"])
        #expect(added[0].properties["string"] == .string("new"))
        #expect(added[0].properties["childModel2"] == .string(child2.uuid.uuidString.lowercased()))
        #expect(added[2].properties["integer"] == .number(JSONNumber(3)))

        scope.modify {
            child.string = "changed"
            parent.childModel = nil
        }
        let changedThenRemoved = log.take()
        #expect(changedThenRemoved.map(\.uuid) == [parent.uuid])

        let fresh = TestModel()
        scope.modify {
            parent.childModel2 = fresh
            fresh.integer = 9
            parent.childModel2 = nil
        }
        let addedThenRemoved = log.take()
        #expect(addedThenRemoved.map(\.uuid) == [parent.uuid])
        #expect(addedThenRemoved.first?.properties.keys == ["childModel2"])
    }

    /// Scenario 48: an add carries every synced property (references as lowercase UUIDs, no local
    /// ones); the parent's change carries exactly the changed keys.
    @Test func addFragmentsCarryEveryProperty() throws {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let child = TestModel()
        let grandchild = TestModel()
        child.localString = "never sent"
        let changeSet = try #require(
            scope.modify {
                parent.childModel = child
                parent.integer = 4
                child.array = [grandchild]
            })
        let add = try #require(changeSet.fragments.first { $0.uuid == child.uuid })
        #expect(add.type == .add)
        #expect(add.properties.keys == child.syncedPropertyKeys)
        #expect(!add.properties.keys.contains("localString"))
        #expect(add.properties["array"] == .array([.string(grandchild.uuid.uuidString.lowercased())]))
        let change = try #require(changeSet.fragments.first { $0.uuid == parent.uuid })
        #expect(change.type == .change)
        #expect(change.properties.keys == ["childModel", "integer"])
    }

    /// Scenario 49: value encodings on the wire.
    @Test func valueEncodings() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let changeSet = try #require(
            scope.modify {
                model.testType = .active
                model.date = Date(timeIntervalSince1970: 10)
                model.color = Color(rgba: 0xFF3F_7F3F)
                model.uint8 = 255
                model.tags = ["a", "b"]
            })
        let properties = try #require(changeSet.fragments.first?.properties)
        #expect(properties["testType"] == .number(JSONNumber(1)))
        #expect(properties["date"]?.encodedString() == "10.0" || properties["date"]?.encodedString() == "10")
        #expect(properties["color"] == .number(JSONNumber(UInt64(0xFF3F_7F3F))))
        #expect(properties["uint8"] == .number(JSONNumber(UInt64(255))))
        // A changed collection travels as operations (docs/model.md, "Collection operations").
        #expect(properties["tags"] == ["insert": ["a", "b"], "before": nil])
    }

    /// Scenario 50 (local part): local properties never appear in fragments.
    @Test func localPropertiesAreNotRecorded() {
        let model = TestModel()
        let scope = Scope(root: model)
        let log = ChangeLog(scope)
        let counter = Counter()
        model.observeChangeImmediately(counter, key: "localString") { counter.increment() }
        model.localString = "local"
        scope.flush()
        #expect(counter.count == 1)
        #expect(log.take().isEmpty)
    }

    /// Scenario 53: moving a child is a change, not a new add; re-adding after removal is an add.
    @Test func movingAChild() {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        let child = TestModel()
        scope.modify { root.childModel = child }
        #expect(log.take().count == 2)
        scope.modify {
            root.childModel = nil
            root.childModel2 = child
        }
        let moved = log.take()
        #expect(moved.map(\.summary) == ["change TestModel"])
        #expect(moved.first?.uuid == root.uuid)
        scope.modify { root.childModel2 = nil }
        #expect(log.take().count == 1)
        scope.modify { root.childModel = child }
        #expect(log.take().map(\.summary) == ["add TestModel", "change TestModel"])
    }

    /// The original lost these: edits made to an object before it moves within one batch are kept.
    @Test func editsBeforeAMoveAreKept() {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        let child = TestModel()
        scope.modify { root.childModel = child }
        _ = log.take()
        scope.modify {
            child.integer = 42
            root.childModel = nil
            root.childModel2 = child
        }
        let fragments = log.take()
        let childChange = fragments.first { $0.uuid == child.uuid }
        #expect(childChange?.type == .change)
        #expect(childChange?.properties["integer"] == .number(JSONNumber(42)))
    }

    /// Found by the randomized replay: a property changed while the object was out of the scope
    /// (between a detach and a re-attach in one batch) is recorded, and reverts to its old value.
    @Test func editsWhileDetachedWithinABatchAreKept() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let child = TestModel()
        scope.modify { root.childModel = child }
        let changeSet = try #require(
            scope.modify {
                root.childModel = nil
                child.integer = 5
                root.childModel2 = child
            })
        let childChange = changeSet.fragments.first { $0.uuid == child.uuid }
        #expect(childChange?.properties["integer"] == .number(JSONNumber(5)))
        changeSet.revert()
        #expect(child.integer == 0)
        #expect(root.childModel === child && root.childModel2 == nil)
    }

    /// Scenario 54: an object assigned only to a local property produces no add.
    @Test func objectsOnlyInLocalPropertiesAreNotAdded() {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        scope.modify { root.localModel = TestModel() }
        #expect(log.take().isEmpty)
    }

    @Test func changesOutsideModifyAreBatchedUntilTheFlush() {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        root.integer = 1
        root.string = "a"
        root.integer = 2
        #expect(log.changeSets.isEmpty)
        scope.flush()
        #expect(log.changeSets.count == 1)
        #expect(log.changeSets.first?.isAtomic == false)
        #expect(log.take().first?.properties.keys == ["integer", "string"])
    }

    @Test func modifyFlushesEarlierChangesSeparately() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        root.integer = 1
        let changeSet = try #require(scope.modifyAtomically { root.string = "inside" })
        #expect(changeSet.isAtomic)
        #expect(changeSet.fragments.first?.properties.keys == ["string"])
        #expect(log.changeSets.count == 2)
        #expect(log.changeSets.first?.fragments.first?.properties.keys == ["integer"])
        #expect(scope.modify {} == nil)
    }

    @Test func modifyAtomicallyRevertsWhenTheBodyThrows() {
        struct Abort: Error {}
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        let child = TestModel()
        #expect(throws: Abort.self) {
            try scope.modifyAtomically {
                root.integer = 5
                root.childModel = child
                throw Abort()
            }
        }
        #expect(root.integer == 0)
        #expect(root.childModel == nil)
        #expect(scope.objectCount == 1)
        #expect(log.take().isEmpty)
    }
}
