import Foundation
import Jetstream
import JetstreamModel
import Testing

@Suite struct ScopeGraphTests {
    @Test func propertiesAreDiscoveredInDeclarationOrder() {
        let model = TestModel()
        #expect(model.syncedPropertyKeys.first == "string")
        #expect(model.syncedPropertyKeys.contains("childModel2"))
        #expect(!model.syncedPropertyKeys.contains("localString"))
        #expect(model.propertyKeys.contains("localString"))
        #expect(TestModel.className == "TestModel")
    }

    @Test func assigningAChildAttachesItsWholeSubtree() {
        let root = TestModel()
        let scope = Scope(root: root)
        let child = TestModel()
        let grandchild = TestModel()
        child.childModel = grandchild
        #expect(grandchild.scope == nil)
        root.childModel = child
        #expect(child.scope === scope)
        #expect(grandchild.scope === scope)
        #expect(scope.objectCount == 3)
        #expect(scope.getObject(grandchild.uuid) === grandchild)
        #expect(scope.getObject(grandchild.uuid.uuidString.lowercased()) === grandchild)
        #expect(scope.objects.map(\.uuid) == [root.uuid, child.uuid, grandchild.uuid])
    }

    /// Scenario 64: each of three children attaches once and detaches once; a chain built off-scope
    /// attaches and detaches as a whole; assigning the same value twice does not count again.
    @Test func attachAndDetachCounts() {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let children = [TestModel(), TestModel(), TestModel()]
        let attached = Counter()
        let detached = Counter()
        for child in children {
            child.observeAttach(attached) { _ in attached.increment() }
            child.observeDetach(detached) { _ in detached.increment() }
        }
        for child in children {
            parent.childModel = child
            parent.childModel = child
        }
        parent.childModel = nil
        #expect(attached.count == 3)
        #expect(detached.count == 3)

        attached.count = 0
        detached.count = 0
        children[0].childModel = children[1]
        children[1].childModel = children[2]
        parent.childModel = children[0]
        #expect(attached.count == 3)
        parent.childModel = nil
        #expect(detached.count == 3)
        #expect(children.allSatisfy { $0.scope == nil })
        #expect(scope.objectCount == 1)
    }

    /// Scenario 65: two parents; removing one keeps the child, removing both detaches its subtree.
    @Test func multipleParents() {
        let parent = TestModel()
        let scope = Scope(root: parent)
        let child = TestModel()
        let grandchild = TestModel()
        child.childModel = grandchild
        parent.childModel = child
        parent.childModel2 = child
        #expect(child.parents.count == 2)
        parent.childModel = nil
        #expect(child.parents.count == 1)
        #expect(child.scope === scope)
        parent.childModel2 = nil
        #expect(child.scope == nil)
        #expect(grandchild.scope == nil)
        #expect(scope.objectCount == 1)
    }

    /// A bug of the original: root→A→C and root→B→C; detaching A must not detach C, which B still holds.
    @Test func detachingKeepsSharedChildren() {
        let root = TestModel()
        let scope = Scope(root: root)
        let a = TestModel()
        let b = TestModel()
        let shared = TestModel()
        a.childModel = shared
        b.childModel = shared
        root.array = [a, b]
        #expect(scope.objectCount == 4)
        a.detach()
        #expect(root.array == [b])
        #expect(a.scope == nil)
        #expect(shared.scope === scope)
        #expect(scope.objectCount == 3)
    }

    /// The original leaked unreachable cycles; they leave the scope here.
    @Test func unreachableCyclesLeave() {
        let root = TestModel()
        let scope = Scope(root: root)
        let a = TestModel()
        let b = TestModel()
        a.childModel = b
        b.childModel = a
        root.childModel = a
        #expect(scope.objectCount == 3)
        root.childModel = nil
        #expect(a.scope == nil && b.scope == nil)
        #expect(scope.objectCount == 1)
    }

    /// Scenario 67: arrays give parents and scope; removeLast or detach() take them away; an object
    /// in two arrays has two parents, and one relationship per (parent, key) however often it appears.
    @Test func arrayParents() {
        let root = TestModel()
        let scope = Scope(root: root)
        let child = TestModel()
        root.array.append(child)
        #expect(child.parents.count == 1 && child.scope === scope)
        root.array.removeLast()
        #expect(child.parents.isEmpty && child.scope == nil)
        root.array.append(child)
        root.array[0].detach()
        #expect(root.array.isEmpty && child.scope == nil)

        root.array = [child, child]
        root.array2 = [child]
        #expect(child.parents.count == 2)
        root.array = []
        #expect(child.parents.count == 1 && child.scope === scope)
        root.array2 = []
        #expect(child.parents.isEmpty && child.scope == nil)
    }

    @Test func localReferencesDoNotAttach() {
        let root = TestModel()
        let scope = Scope(root: root)
        let local = TestModel()
        root.localModel = local
        #expect(local.scope == nil)
        #expect(local.parents.isEmpty)
        #expect(scope.objectCount == 1)
    }

    @Test func parentCallbacksCarryParentAndKey() {
        let root = TestModel()
        let scope = Scope(root: root)
        let child = TestModel()
        var events: [String] = []
        let observer = Counter()
        child.observeAddedToParent(observer) { parent, key in events.append("added \(key) \(parent === root)") }
        child.observeRemovedFromParent(observer) { parent, key in events.append("removed \(key) \(parent === root)") }
        root.childModel = child
        root.childModel = nil
        #expect(events == ["added childModel true", "removed childModel true"])
        #expect(scope.objectCount == 1)
    }

    /// Scenario 66: making a child the root of a new scope takes it from its parent; it and its
    /// subtree see a detach, then an attach.
    @Test func makingAnObjectARootTakesItFromItsParents() {
        let root = TestModel()
        let first = Scope(root: root)
        let child = TestModel()
        let grandchild = TestModel()
        child.childModel = grandchild
        root.childModel = child
        var events: [String] = []
        let observer = Counter()
        for (name, object) in [("child", child), ("grandchild", grandchild)] {
            object.observeDetach(observer) { scope in events.append("\(name) detach \(scope === first)") }
            object.observeAttach(observer) { scope in events.append("\(name) attach \(scope === first)") }
        }
        let second = Scope(root: child)
        #expect(root.childModel == nil)
        #expect(child.scope === second && grandchild.scope === second)
        #expect(first.objectCount == 1)
        #expect(second.objectCount == 2)
        #expect(child.isScopeRoot)
        #expect(
            events.sorted() == [
                "child attach false", "child detach true", "grandchild attach false", "grandchild detach true",
            ])
        #expect(events.firstIndex(of: "grandchild detach true")! < events.firstIndex(of: "grandchild attach false")!)
    }
}
