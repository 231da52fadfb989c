import CanvasModel
import Foundation
import Jetstream
import JetstreamModel
import Testing

@Suite struct RemoteApplyTests {
    private func fragment(
        _ type: FragmentType, _ uuid: UUID, _ clsName: String = "TestModel", _ properties: [String: JSONValue] = [:]
    ) -> SyncFragment {
        SyncFragment(
            type: type, uuid: uuid, clsName: clsName,
            properties: JSONObject(properties.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value) }))
    }

    private func wire(_ uuid: UUID) -> JSONValue { .string(uuid.uuidString.lowercased()) }

    /// Scenarios 34 and 35: an add linked by a change (in either order) creates the object with
    /// its parent and scope; a change sets values. Nothing is recorded; observers fire.
    @Test func addsAndChangesApplyWithoutRecording() throws {
        let root = TestModel()
        let child = TestModel()
        root.childModel = child
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        let queued = Counter()
        child.observeChange(queued) { queued.increment() }
        let newUUID = UUID()
        try scope.applySyncFragments([
            fragment(
                .change, child.uuid, "TestModel", ["childModel": wire(newUUID), "string": "testing", "integer": 20]),
            fragment(.add, newUUID, "TestModel", ["string": "set correctly"]),
        ])
        let added = try #require(child.childModel)
        #expect(added.uuid == newUUID)
        #expect(added.string == "set correctly")
        #expect(added.scope === scope)
        #expect(added.parents.first?.parent === child)
        #expect(child.string == "testing" && child.integer == 20)
        #expect(scope.objectCount == 3)
        #expect(queued.count == 1)
        #expect(log.take().isEmpty)
    }

    /// Scenarios 36 and 37, decided strictly (docs/model.md, "Strictness decisions"): null for a
    /// non-optional, a string for an integer, a fraction for Int32, an unknown property are
    /// rejected and nothing changes.
    @Test func invalidValuesRejectTheWholeSet() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        root.integer = 10
        scope.flush()
        let error = #expect(throws: ScopeApplyError.self) {
            try scope.applySyncFragments([
                fragment(.change, root.uuid, "TestModel", ["string": "fine"]),
                fragment(.change, root.uuid, "TestModel", ["integer": .null]),
                fragment(.change, root.uuid, "TestModel", ["integer": "5"]),
                fragment(.change, root.uuid, "TestModel", ["int32": .number(JSONNumber(5.5))]),
                fragment(.change, root.uuid, "TestModel", ["bogus": 1]),
            ])
        }
        guard case .rejected(let replies) = error else {
            Issue.record("expected a rejection, got \(String(describing: error))")
            return
        }
        #expect(
            replies.map { $0.error?.kind } == [nil, .nullNotAllowed, .typeMismatch, .typeMismatch, .unknownProperty])
        #expect(root.string == nil)
        #expect(root.integer == 10)
    }

    @Test func remoteFragmentsInsideModifyDoNotSplitTheLocalBatch() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        let changeSet = try scope.modify {
            root.integer = 1
            try scope.applySyncFragments([fragment(.change, root.uuid, "TestModel", ["string": "remote"])])
            root.boolean = true
        }
        #expect(log.changeSets.count == 1)
        #expect(changeSet?.fragments.first?.properties.keys == ["integer", "boolean"])
        #expect(root.string == "remote")
    }

    @Test func removalsDetachAndNotify() throws {
        let root = TestModel()
        let child = TestModel()
        root.array = [child]
        let scope = Scope(root: root)
        let detached = Counter()
        child.observeDetach(detached) { _ in detached.increment() }
        let applied = try scope.applySyncFragments([fragment(.change, root.uuid, "TestModel", ["array": []])])
        #expect(applied.removed == [child.uuid])
        #expect(child.scope == nil)
        #expect(detached.count == 1)
        #expect(scope.objectCount == 1)
    }

    /// Local change sets replayed on a second scope reproduce the first: the Swift client and the
    /// model core agree on the encoding of every value type.
    @Test func localChangeSetsReplayOnAnotherScope() throws {
        let source = TestModel()
        let sourceScope = Scope(root: source)
        let replica = TestModel(uuid: source.uuid)
        let replicaScope = Scope(root: replica)
        var sets: [RecordedChangeSet] = []
        sourceScope.onChanges { sets.append($0) }
        let child = TestModel()
        sourceScope.modify {
            source.childModel = child
            source.array = [child, child]
            child.string = "child"
            child.testType = .active
            child.date = Date(timeIntervalSince1970: 1234.5)
            child.color = Color(red: 1, green: 2, blue: 3, alpha: 4)
            child.uint8 = 200
            child.int32 = -7
            child.float32 = 1.5
            child.double64 = 2.25
            child.boolean = true
            child.tags = ["x", "y"]
            child.int64 = .min
            child.uint64 = .max
            child.numbers = [0.1, -2, 1e300]
        }
        sourceScope.modify { source.integer = 3 }
        for set in sets {
            try replicaScope.applySyncFragments(set.fragments)
        }
        let copy = try #require(replica.childModel)
        #expect(copy.uuid == child.uuid)
        #expect(replica.array == [copy, copy])
        #expect(copy.string == "child" && copy.testType == .active)
        #expect(copy.date == Date(timeIntervalSince1970: 1234.5))
        #expect(copy.color == Color(red: 1, green: 2, blue: 3, alpha: 4))
        #expect(copy.uint8 == 200 && copy.int32 == -7 && copy.float32 == 1.5 && copy.double64 == 2.25)
        #expect(copy.boolean && copy.tags == ["x", "y"])
        #expect(copy.int64 == .min && copy.uint64 == .max && copy.numbers == [0.1, -2, 1e300])
        #expect(replica.integer == 3)
        #expect(try replicaScope.currentState().exportFragments() == sourceScope.currentState().exportFragments())
    }

    @Test func aLocalWriteThatBreaksTheSchemaIsReported() {
        let canvas = Canvas()
        let scope = Scope(root: canvas)
        let shape = Shape()
        canvas.shapes = [shape]
        shape.width = -1
        #expect {
            try scope.applySyncFragments([])
        } throws: { error in
            guard case .invalidLocalState = error as? ScopeApplyError else { return false }
            return true
        }
    }

    // MARK: full state (scenarios 40–44)

    @Test func fullStateAdoptsTheRootAndReplacesTheTree() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let rootUUID = UUID()
        let childUUID = UUID()
        let full = [
            fragment(.change, rootUUID, "TestModel", ["string": "root", "childModel": wire(childUUID)]),
            fragment(.add, childUUID, "TestModel", ["string": "ok"]),
        ]
        // 40: initial state.
        try scope.applyFullState(full, rootUUID: rootUUID)
        #expect(root.uuid == rootUUID)
        #expect(scope.getObject(rootUUID) === root)
        #expect(root.childModel?.string == "ok")
        #expect(scope.objectCount == 2)

        // 41: re-applying the same state notifies nobody.
        let counter = Counter()
        root.observeChangeImmediately(counter) { counter.increment() }
        root.childModel?.observeChangeImmediately(counter) { counter.increment() }
        try scope.applyFullState(full, rootUUID: rootUUID)
        #expect(counter.count == 0)

        // 43: moving the child to childModel2.
        let child = try #require(root.childModel)
        try scope.applyFullState(
            [
                fragment(.change, rootUUID, "TestModel", ["string": "root", "childModel2": wire(childUUID)]),
                fragment(.add, childUUID, "TestModel", ["string": "ok"]),
            ], rootUUID: rootUUID)
        #expect(root.childModel == nil)
        #expect(root.childModel2 === child)
        #expect(scope.objectCount == 2)

        // 42: a state without the child detaches it; missing keys fall back to defaults.
        try scope.applyFullState([fragment(.change, rootUUID, "TestModel", [:])], rootUUID: rootUUID)
        #expect(root.childModel2 == nil)
        #expect(root.string == nil)
        #expect(child.scope == nil)
        #expect(scope.objectCount == 1)
    }

    @Test func fullStateDropsUndeliveredLocalChanges() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let log = ChangeLog(scope)
        root.integer = 7
        try scope.applyFullState([fragment(.change, root.uuid, "TestModel", ["string": "server"])], rootUUID: root.uuid)
        #expect(root.integer == 0)
        #expect(root.string == "server")
        #expect(log.take().isEmpty)
    }

    /// Scenario 44: dependent-first order.
    @Test func fullStateInDependentFirstOrder() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let (c1, c2) = (UUID(), UUID())
        try scope.applyFullState(
            [
                fragment(.add, c2, "TestModel", [:]),
                fragment(.add, c1, "TestModel", ["childModel": wire(c2)]),
                fragment(.change, root.uuid, "TestModel", ["childModel2": wire(c1)]),
            ], rootUUID: root.uuid)
        #expect(root.childModel2?.uuid == c1)
        #expect(root.childModel2?.childModel?.uuid == c2)
        #expect(scope.objectCount == 3)
    }

    @Test func anInvalidFullStateChangesNothing() {
        let root = TestModel()
        root.integer = 1
        let scope = Scope(root: root)
        #expect(throws: ScopeApplyError.self) {
            try scope.applyFullState(
                [fragment(.change, root.uuid, "TestModel", ["integer": "one"])], rootUUID: root.uuid)
        }
        #expect(root.integer == 1)
    }
}
