import CanvasModel
import Foundation
import Jetstream
import JetstreamModel
import Testing

@Suite struct ObservationTests {
    /// Scenario 69: an immediate single-key observer counts only its key; a cancelled one never
    /// fires; a queued one fires once per batch; collection callbacks fire per element.
    @Test func observerCounting() {
        let model = TestModel()
        let scope = Scope(root: model)
        let counter = Counter()
        let keyCounter = Counter()
        let keysCounter = Counter()
        let cancelled = Counter()
        let queued = Counter()
        model.observeChangeImmediately(counter) { counter.increment() }
        model.observeChangeImmediately(keyCounter, key: "integer") { keyCounter.increment() }
        model.observeChangeImmediately(keysCounter, keys: ["integer", "boolean"]) { keysCounter.increment() }
        let cancel = model.observeChangeImmediately(cancelled) { cancelled.increment() }
        model.observeChange(queued) { queued.increment() }
        cancel()
        cancel()

        model.integer = 1
        model.string = "a"
        model.boolean = true
        model.integer = 2
        #expect(counter.count == 4)
        #expect(keyCounter.count == 2)
        #expect(keysCounter.count == 3)
        #expect(cancelled.count == 0)
        #expect(queued.count == 0)
        scope.flush()
        #expect(queued.count == 1)
        scope.flush()
        #expect(queued.count == 1)
    }

    @Test func queuedKeyObserversFireOncePerBatchForTheirKeys() {
        let model = TestModel()
        let scope = Scope(root: model)
        let one = Counter()
        let several = Counter()
        model.observeChange(one, key: "integer") { one.increment() }
        model.observeChange(several, keys: ["string", "boolean"]) { several.increment() }
        model.float32 = 3
        scope.flush()
        #expect(one.count == 0 && several.count == 0)
        model.integer = 1
        model.integer = 2
        model.string = "x"
        model.boolean = true
        scope.flush()
        #expect(one.count == 1)
        #expect(several.count == 1)
    }

    @Test func settingAnEqualValueDoesNotNotify() {
        let model = TestModel()
        let scope = Scope(root: model)
        let log = ChangeLog(scope)
        let counter = Counter()
        model.observeChangeImmediately(counter) { counter.increment() }
        model.integer = 0
        model.string = nil
        model.tags = []
        model.color = nil
        scope.flush()
        #expect(counter.count == 0)
        #expect(log.take().isEmpty)
    }

    /// Scenario 69, collections: append, replace [0], removeLast, assign a new array.
    @Test func collectionCallbacksFirePerElement() {
        let model = TestModel()
        let scope = Scope(root: model)
        let changes = Counter()
        var added: [TestModel] = []
        var removed: [TestModel] = []
        model.observeChangeImmediately(changes, key: "array") { changes.increment() }
        model.observeCollectionAdd(changes, key: "array") { (element: TestModel) in added.append(element) }
        model.observeCollectionRemove(changes, key: "array") { (element: TestModel) in removed.append(element) }
        let (a, b, c) = (TestModel(), TestModel(), TestModel())
        model.array.append(a)
        model.array[0] = b
        model.array.removeLast()
        model.array = [c]
        #expect(changes.count == 4)
        #expect(added == [a, b, c])
        #expect(removed == [a, b])
        #expect(scope.objectCount == 2)
    }

    @Test func primitiveCollectionCallbacks() {
        let model = TestModel()
        let scope = Scope(root: model)
        var added: [String] = []
        var removed: [String] = []
        let observer = Counter()
        model.observeCollectionAdd(observer, key: "tags") { (tag: String) in added.append(tag) }
        model.observeCollectionRemove(observer, key: "tags") { (tag: String) in removed.append(tag) }
        model.tags = ["a", "b", "a"]
        model.tags = ["b", "c"]
        #expect(added == ["a", "b", "a", "c"])
        #expect(removed == ["a", "a"])
        #expect(scope.objectCount == 1)
    }

    /// Scenario 68: tree observers fire for the object or any descendant, once per batch.
    @Test func treeChange() {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let child = TestModel()
        let child2 = TestModel()
        let parentCount = Counter()
        let childCount = Counter()
        let child2Count = Counter()
        parent.observeTreeChange(parentCount) { parentCount.increment() }
        child.observeTreeChange(childCount) { childCount.increment() }
        child2.observeTreeChange(child2Count) { child2Count.increment() }

        parent.array.append(child)
        scope.flush()
        #expect(parentCount.count == 1)

        child.childModel = child2
        scope.flush()
        #expect(parentCount.count == 2 && childCount.count == 1 && child2Count.count == 0)

        child2.string = "changed"
        child2.boolean = true
        scope.flush()
        #expect(parentCount.count == 3 && childCount.count == 2 && child2Count.count == 1)
    }

    @Test func observationsEndWhenTheObserverIsDeallocated() {
        let model = TestModel()
        let scope = Scope(root: model)
        let fired = Counter()
        do {
            let observer = Counter()
            model.observeChangeImmediately(observer) { fired.increment() }
            model.observeChange(observer) { fired.increment() }
            model.observeTreeChange(observer) { fired.increment() }
            #expect(model.observationCount == 3)
            model.integer = 1
            scope.flush()
            #expect(fired.count == 3)
        }
        model.integer = 2
        scope.flush()
        #expect(fired.count == 3)
        #expect(model.observationCount == 0)
    }

    @Test func removeObserversRemovesOnlyThatObserversObservations() {
        let model = TestModel()
        let scope = Scope(root: model)
        let first = Counter()
        let second = Counter()
        model.observeChangeImmediately(first) { first.increment() }
        model.observeChange(first) { first.increment() }
        model.observeChangeImmediately(second) { second.increment() }
        model.removeObservers(first)
        model.integer = 5
        scope.flush()
        #expect(first.count == 0)
        #expect(second.count == 1)
        #expect(model.observationCount == 1)
    }

    @Test func anObserverCancelledByAnotherCallbackDoesNotFire() {
        let model = TestModel()
        let scope = Scope(root: model)
        let observer = Counter()
        var cancelSecond: CancelObserver = {}
        model.observeChangeImmediately(observer) { cancelSecond() }
        cancelSecond = model.observeChangeImmediately(observer) { observer.increment() }
        model.integer = 1
        #expect(observer.count == 0)
        #expect(scope.objectCount == 1)
    }

    /// The owner's hook is called once per pending cycle, never inside modify (which flushes itself).
    @Test func onFlushNeededIsCalledOncePerPendingCycle() {
        let model = TestModel()
        let scope = Scope(root: model)
        let requests = Counter()
        let queued = Counter()
        scope.onFlushNeeded = { requests.increment() }
        model.observeChange(queued) { queued.increment() }
        model.integer = 1
        model.string = "a"
        #expect(requests.count == 1)
        #expect(queued.count == 0)
        scope.flush()
        #expect(queued.count == 1)
        model.integer = 2
        #expect(requests.count == 2)
        scope.flush()
        scope.modify { model.integer = 3 }
        #expect(requests.count == 2)
        #expect(queued.count == 3)
    }

    @Test func changesMadeByQueuedObserversAreDeliveredInTheSameFlush() {
        let model = TestModel()
        let scope = Scope(root: model)
        let log = ChangeLog(scope)
        let observer = Counter()
        model.observeChange(observer, key: "integer") { model.string = "derived \(model.integer)" }
        model.integer = 7
        scope.flush()
        #expect(model.string == "derived 7")
        #expect(log.changeSets.count == 2)
        #expect(log.take().map(\.summary) == ["change TestModel", "change TestModel"])
    }
}

@Suite struct KeyPathObservationTests {
    @Test func keyPathsNameTheirProperties() {
        let shape = Shape()
        #expect(shape.propertyKey(\Shape.width) == "width")
        #expect(shape.propertyKey(\Shape.isSelected) == "isSelected")
        #expect(shape.propertyKey(\Shape.uuid) == "")
    }

    @Test func keyPathObservers() {
        let canvas = Canvas()
        let scope = Scope(root: canvas)
        let shape = Shape()
        let moved = Counter()
        let widths = Counter()
        var added: [Shape] = []
        var removed: [Shape] = []
        shape.observeChange(moved, keys: [\Shape.x, \Shape.y]) { moved.increment() }
        shape.observeChangeImmediately(widths, key: \Shape.width) { widths.increment() }
        canvas.observeCollectionAdd(moved, key: \Canvas.shapes) { added.append($0) }
        canvas.observeCollectionRemove(moved, key: \Canvas.shapes) { removed.append($0) }
        canvas.shapes.append(shape)
        shape.x = 1
        shape.y = 2
        shape.width = 3
        shape.height = 4
        scope.flush()
        #expect(moved.count == 1)
        #expect(widths.count == 1)
        canvas.shapes = []
        #expect(added == [shape])
        #expect(removed == [shape])
    }
}
