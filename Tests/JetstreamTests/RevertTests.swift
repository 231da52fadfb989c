import Foundation
import Jetstream
import JetstreamModel
import Testing

@Suite struct RevertTests {
    /// Scenario 51: revert restores the old values and records nothing.
    @Test func revertRestoresValuesWithoutNewFragments() throws {
        let model = TestModel()
        model.integer = 10
        let scope = Scope(root: model)
        let log = ChangeLog(scope)
        let changeSet = try #require(
            scope.modify {
                model.integer = 20
                model.float32 = 2.5
                model.string = "new"
            })
        _ = log.take()
        let observer = Counter()
        model.observeChangeImmediately(observer) { observer.increment() }
        changeSet.revert()
        #expect(model.integer == 10 && model.float32 == 0 && model.string == nil)
        #expect(changeSet.isReverted)
        #expect(observer.count == 3)
        scope.flush()
        #expect(log.take().isEmpty)
        changeSet.revert()
        #expect(observer.count == 3)
    }

    /// Scenario 52: reverting an add removes the object; reverting a removal brings it back;
    /// reverting an append empties the array.
    @Test func revertAddsRemovalsAndAppends() throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let child = TestModel()
        let added = try #require(scope.modify { root.childModel = child })
        added.revert()
        #expect(root.childModel == nil)
        #expect(scope.objectCount == 1)

        scope.modify { root.childModel = child }
        let removed = try #require(scope.modify { root.childModel = nil })
        removed.revert()
        #expect(root.childModel === child)
        #expect(child.scope === scope)
        #expect(scope.objectCount == 2)

        let appended = try #require(scope.modify { root.array.append(TestModel()) })
        appended.revert()
        #expect(root.array.isEmpty)
        #expect(scope.objectCount == 2)
    }

    /// Only the first original value per key is kept when a key changes several times.
    @Test func revertRestoresTheValueFromBeforeTheBatch() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let changeSet = try #require(
            scope.modify {
                model.integer = 1
                model.integer = 2
                model.integer = 3
            })
        #expect(changeSet.fragments.first?.properties["integer"] == .number(JSONNumber(3)))
        changeSet.revert()
        #expect(model.integer == 0)
    }
}

@Suite struct ChangeSetQueueTests {
    private func setValues(_ model: TestModel, _ value: Int) {
        model.string = "test \(value)"
        model.integer = value
        model.float32 = Float(value)
    }

    private func expectValues(_ model: TestModel, _ value: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(model.string == "test \(value)", sourceLocation: sourceLocation)
        #expect(model.integer == value, sourceLocation: sourceLocation)
        #expect(model.float32 == Float(value), sourceLocation: sourceLocation)
    }

    /// Scenario 55: cs1 (1→2) and cs2 (2→3) queued; revert cs1 keeps 3; revert cs2 restores 1.
    @Test func rebasing() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let queue = ChangeSetQueue()
        scope.onChanges { queue.append($0) }
        scope.modify { setValues(model, 1) }
        queue.complete(try #require(queue.pending.first))
        let cs1 = try #require(scope.modify { setValues(model, 2) })
        let cs2 = try #require(scope.modify { setValues(model, 3) })
        #expect(queue.pending.count == 2)
        queue.revert(cs1)
        expectValues(model, 3)
        #expect(queue.pending.count == 1)
        queue.revert(cs2)
        expectValues(model, 1)
        #expect(queue.pending.isEmpty)
    }

    @Test func subsetRebasing() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let queue = ChangeSetQueue()
        scope.onChanges { queue.append($0) }
        scope.modify { setValues(model, 1) }
        queue.complete(try #require(queue.pending.first))
        let cs1 = try #require(scope.modify { setValues(model, 2) })
        let cs2 = try #require(scope.modify { model.string = "test 3" })
        queue.revert(cs1)
        #expect(model.string == "test 3")
        #expect(model.integer == 1 && model.float32 == 1)
        queue.revert(cs2)
        expectValues(model, 1)
    }

    @Test func supersetRebasing() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let queue = ChangeSetQueue()
        scope.onChanges { queue.append($0) }
        scope.modify { setValues(model, 1) }
        queue.complete(try #require(queue.pending.first))
        let cs1 = try #require(scope.modify { model.string = "test 2" })
        let cs2 = try #require(scope.modify { setValues(model, 3) })
        queue.revert(cs1)
        expectValues(model, 3)
        queue.revert(cs2)
        expectValues(model, 1)
    }

    /// Revert cs1, then complete cs2 → cs2's values stand.
    @Test func revertThenComplete() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let queue = ChangeSetQueue()
        scope.onChanges { queue.append($0) }
        let cs1 = try #require(scope.modify { setValues(model, 2) })
        let cs2 = try #require(scope.modify { setValues(model, 3) })
        queue.revert(cs1)
        queue.complete(cs2)
        expectValues(model, 3)
        #expect(queue.pending.isEmpty)
    }

    /// Scenario 58 with the intended semantics: a rejected second set reverts only its own keys.
    @Test func revertingALaterSetLeavesEarlierValues() throws {
        let root = TestModel()
        let child = TestModel()
        root.childModel = child
        let scope = Scope(root: root)
        let queue = ChangeSetQueue()
        scope.onChanges { queue.append($0) }
        let rootSet = try #require(scope.modify { root.integer = 20 })
        let childSet = try #require(scope.modify { child.integer = 20 })
        queue.complete(rootSet)
        queue.revert(childSet)
        #expect(root.integer == 20)
        #expect(child.integer == 0)
    }
}
