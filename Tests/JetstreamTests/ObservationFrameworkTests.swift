import Foundation
import Jetstream
import JetstreamModel
import Observation
import Synchronization
import Testing

/// Swift's Observation framework (what SwiftUI tracks) on model objects: a read inside
/// `withObservationTracking` is told of the next change to what it read, whoever changes it.
@Suite struct ObservationFrameworkTests {
    @Test func aLocalSetOfAScalarNotifiesTheReaderOnce() {
        let model = TestModel()
        _ = Scope(root: model)
        let signal = ChangeSignal.tracking { _ = model.integer }
        model.integer = 1
        #expect(signal.count == 1)
        model.integer = 2
        #expect(signal.count == 1, "a tracking is told once, as with @Observable")
    }

    @Test func theNotificationComesBeforeTheStoreAsWithObservable() {
        let model = TestModel()
        model.string = "old"
        let seen = Mutex<String?>(nil)
        let box = UncheckedBox(model)
        withObservationTracking {
            _ = model.string
        } onChange: {
            seen.withLock { $0 = box.value.string }
        }
        model.string = "new"
        #expect(seen.withLock { $0 } == "old")
    }

    @Test func aPropertyThatWasNotReadDoesNotNotify() {
        let model = TestModel()
        _ = Scope(root: model)
        let signal = ChangeSignal.tracking { _ = model.integer }
        model.string = "other"
        model.boolean = true
        model.tags.append("t")
        #expect(signal.count == 0)
        let other = TestModel()
        other.integer = 5
        #expect(signal.count == 0, "the same property of another object")
    }

    @Test func settingAnEqualValueDoesNotNotify() {
        let model = TestModel()
        model.integer = 3
        let signal = ChangeSignal.tracking { _ = model.integer }
        model.integer = 3
        #expect(signal.count == 0)
    }

    @Test func collectionAppendAndRemoveNotify() {
        let model = TestModel()
        let scope = Scope(root: model)
        let appended = ChangeSignal.tracking { _ = model.array.count }
        let child = TestModel()
        model.array.append(child)
        #expect(appended.count == 1)

        let removed = ChangeSignal.tracking { _ = model.array }
        model.array.removeAll { $0 === child }
        #expect(removed.count == 1)

        let primitive = ChangeSignal.tracking { _ = model.tags }
        model.tags.append("a")
        #expect(primitive.count == 1)
        #expect(scope.objectCount == 1)
    }

    /// `detach()` writes the parent's collection through the framework, not through the wrapper.
    @Test func detachNotifiesTheReaderOfTheParentsCollection() {
        let model = TestModel()
        let scope = Scope(root: model)
        let child = TestModel()
        model.array = [child]
        let signal = ChangeSignal.tracking { _ = model.array }
        child.detach()
        #expect(signal.count == 1)
        #expect(model.array.isEmpty && scope.objectCount == 1)
    }

    @Test func aPropertyOfANestedObjectNotifies() {
        let model = TestModel()
        let scope = Scope(root: model)
        let child = TestModel()
        model.array.append(child)
        model.childModel = TestModel()
        let signal = ChangeSignal.tracking {
            _ = model.array.first?.string
            _ = model.childModel?.integer
        }
        child.string = "nested"
        #expect(signal.count == 1)

        let deeper = ChangeSignal.tracking { _ = model.childModel?.integer }
        model.childModel?.integer = 7
        #expect(deeper.count == 1)
        #expect(scope.objectCount == 3)
    }

    @Test func aLocalPropertyNotifies() {
        let model = TestModel()
        let signal = ChangeSignal.tracking { _ = model.localString }
        model.localString = "mine"
        #expect(signal.count == 1)
    }

    /// The framework's apply path (what `JetstreamClient` calls for the server's events) writes
    /// through the slots: a property read earlier notifies, one that was not does not.
    @Test func aRemoteChangeSetNotifies() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let child = TestModel()
        model.array = [child]
        scope.flush()
        let string = ChangeSignal.tracking { _ = model.string }
        let integer = ChangeSignal.tracking { _ = model.integer }
        let nested = ChangeSignal.tracking { _ = model.array.first?.boolean }
        try scope.applySyncFragments([
            SyncFragment(type: .change, uuid: model.uuid, clsName: "TestModel", properties: ["string": "remote"]),
            SyncFragment(type: .change, uuid: child.uuid, clsName: "TestModel", properties: ["boolean": true]),
        ])
        #expect(model.string == "remote" && child.boolean)
        #expect(string.count == 1)
        #expect(nested.count == 1)
        #expect(integer.count == 0)

        let collection = ChangeSignal.tracking { _ = model.array.count }
        let added = UUID()
        try scope.applySyncFragments([
            SyncFragment(type: .add, uuid: added, clsName: "TestModel", properties: [:]),
            SyncFragment(
                type: .change, uuid: model.uuid, clsName: "TestModel",
                properties: ["array": ["insert": [.string(added.uuidString.lowercased())], "before": .null]]),
        ])
        #expect(model.array.map(\.uuid) == [child.uuid, added])
        #expect(collection.count == 1)
    }

    @Test func aFullStateNotifies() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let signal = ChangeSignal.tracking { _ = model.integer }
        try scope.applyFullState(
            [SyncFragment(type: .change, uuid: model.uuid, clsName: "TestModel", properties: ["integer": 9])],
            rootUUID: model.uuid)
        #expect(model.integer == 9)
        #expect(signal.count == 1)
    }

    @Test func aRevertNotifies() throws {
        let model = TestModel()
        let scope = Scope(root: model)
        let changeSet = try #require(scope.modify { model.integer = 4 })
        let signal = ChangeSignal.tracking { _ = model.integer }
        changeSet.revert()
        #expect(model.integer == 0)
        #expect(signal.count == 1)
    }

    /// The key path a property's wrapper gets is rooted at the declaring class: reads through a
    /// subclass and writes by the framework meet under the same key path.
    @Test func anInheritedPropertyNotifiesForLocalAndRemoteWrites() throws {
        let item = DerivedItem()
        let scope = Scope(root: item)
        let local = ChangeSignal.tracking { _ = item.title }
        item.title = "local"
        #expect(local.count == 1)
        let remote = ChangeSignal.tracking { _ = (item as BaseItem).title }
        try scope.applySyncFragments([
            SyncFragment(type: .change, uuid: item.uuid, clsName: "DerivedItem", properties: ["title": "remote"])
        ])
        #expect(item.title == "remote")
        #expect(remote.count == 1)
    }

    /// Both mechanisms see the same write; the observer API keeps its own timing.
    @Test func theObserverAPIKeepsWorkingAlongside() {
        let model = TestModel()
        let scope = Scope(root: model)
        let immediate = Counter()
        let queued = Counter()
        model.observeChangeImmediately(immediate, key: \TestModel.integer) { immediate.increment() }
        model.observeChange(queued, key: \TestModel.integer) { queued.increment() }
        let signal = ChangeSignal.tracking { _ = model.integer }
        model.integer = 1
        #expect(signal.count == 1 && immediate.count == 1 && queued.count == 0)
        scope.flush()
        #expect(queued.count == 1)
        #expect(model.propertyKey(\TestModel.integer) == "integer")
    }

    @Test func modelObjectsAreObservable() {
        let model: any Observable = TestModel()
        #expect(model is ModelObject)
    }
}

/// Counts the change notifications of one `withObservationTracking` (whose callback is `@Sendable`).
final class ChangeSignal: Sendable {
    private let fired = Mutex(0)

    var count: Int { fired.withLock { $0 } }

    /// Runs `read` under observation tracking and counts the notifications that follow.
    static func tracking(_ read: () -> Void) -> ChangeSignal {
        let signal = ChangeSignal()
        withObservationTracking(read) { signal.fired.withLock { $0 += 1 } }
        return signal
    }
}

/// Lets a `@Sendable` change callback read a model object in a single-threaded test: the registrar
/// calls it synchronously on the writer's thread, the object's own.
final class UncheckedBox<Value: AnyObject>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A property declared in a superclass of the scope's class.
class BaseItem: ModelObject {
    @Synced var title = ""
}

final class DerivedItem: BaseItem {}
