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
