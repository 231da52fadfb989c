import CanvasModel
import Foundation
import Jetstream
import JetstreamModel
import Testing

/// The original README's example: a canvas of shapes, one view per shape, views that redraw when
/// their shape changes, and a second participant whose changes arrive as sync fragments.
private final class ShapeView {
    let shape: Shape
    private(set) var frame: (x: Float, y: Float, width: Float, height: Float) = (0, 0, 0, 0)
    private(set) var redraws = 0

    init(shape: Shape) {
        self.shape = shape
        shape.observeChange(self) { [unowned self] in update() }
        update()
    }

    private func update() {
        frame = (shape.x, shape.y, shape.width, shape.height)
        redraws += 1
    }
}

private final class CanvasViewController {
    let canvas: Canvas
    private(set) var shapeViews: [UUID: ShapeView] = [:]

    init(canvas: Canvas) {
        self.canvas = canvas
        canvas.shapes.forEach(addView)
        canvas.observeCollectionAdd(self, key: "shapes") { [unowned self] (shape: Shape) in addView(shape) }
        canvas.observeCollectionRemove(self, key: "shapes") { [unowned self] (shape: Shape) in
            shapeViews[shape.uuid] = nil
        }
    }

    private func addView(_ shape: Shape) {
        shapeViews[shape.uuid] = ShapeView(shape: shape)
    }

    func addShape(at x: Float, _ y: Float) -> Shape {
        let shape = Shape()
        shape.x = x
        shape.y = y
        canvas.shapes.append(shape)
        return shape
    }
}

/// Two participants, each with its own scope; what one records, the other applies (the gateway's
/// part, validating and relaying, is played by the model core inside `applySyncFragments`).
private final class Peer {
    let canvas: Canvas
    let scope: Scope
    let controller: CanvasViewController
    var outbox: [SyncFragment] = []

    init(rootUUID: UUID) {
        canvas = Canvas(uuid: rootUUID)
        scope = Scope(name: "canvas-1", root: canvas)
        controller = CanvasViewController(canvas: canvas)
        scope.onChanges { [unowned self] changeSet in outbox += changeSet.fragments }
    }

    /// Sends the outbox as JSON text, as it travels to and from the gateway.
    func send(to other: Peer) throws {
        defer { outbox = [] }
        let wire = JSONValue.array(outbox.map(\.jsonValue)).encodedString()
        guard case .array(let elements) = try JSONParser.parse(wire) else {
            Issue.record("not an array: \(wire)")
            return
        }
        try other.scope.applySyncFragments(elements.map { try SyncFragment(json: $0) })
    }
}

@Suite struct CanvasExampleTests {
    @Test func viewsFollowLocalAndRemoteChanges() throws {
        let rootUUID = UUID()
        let alice = Peer(rootUUID: rootUUID)
        let bob = Peer(rootUUID: rootUUID)

        let shape = alice.scope.modify { _ = alice.controller.addShape(at: 10, 20) }
        #expect(shape?.fragments.map(\.summary) == ["add Shape", "change Canvas"])
        #expect(alice.controller.shapeViews.count == 1)
        try alice.send(to: bob)
        let bobsView = try #require(bob.controller.shapeViews.values.first)
        #expect(bobsView.frame == (10, 20, 100, 100))
        #expect(bobsView.redraws == 1)

        // Bob drags the shape: one queued redraw for two property changes, on both sides.
        let aliceView = try #require(alice.controller.shapeViews.values.first)
        bob.scope.modify {
            bobsView.shape.x = 50
            bobsView.shape.y = 60
        }
        #expect(bobsView.redraws == 2)
        try bob.send(to: alice)
        #expect(aliceView.frame == (50, 60, 100, 100))
        #expect(aliceView.redraws == 2)

        // Alice removes it; Bob's view goes away and the shape leaves his scope.
        alice.scope.modify { alice.canvas.shapes.removeAll() }
        try alice.send(to: bob)
        #expect(bob.controller.shapeViews.isEmpty)
        #expect(bob.scope.objectCount == 1)
        #expect(bob.canvas.shapes.isEmpty)
    }

    @Test func invalidRemoteChangesAreRejectedBeforeAnyViewChanges() throws {
        let rootUUID = UUID()
        let alice = Peer(rootUUID: rootUUID)
        let bob = Peer(rootUUID: rootUUID)
        alice.scope.modify { _ = alice.controller.addShape(at: 1, 2) }
        try alice.send(to: bob)
        let view = try #require(bob.controller.shapeViews.values.first)
        let bad = SyncFragment(
            type: .change, uuid: view.shape.uuid, clsName: "Shape",
            properties: JSONObject([.init(key: "x", value: 5), .init(key: "width", value: -3)]))
        #expect(throws: ScopeApplyError.self) { try bob.scope.applySyncFragments([bad]) }
        #expect(view.frame == (1, 2, 100, 100))
        #expect(view.redraws == 1)
    }

    @Test func theCanvasModelEmitsTheSchemaOfMODELmd() throws {
        let schema = try Canvas.schema(scopePattern: "canvas-*")
        #expect(schema.classes.map(\.name) == ["Canvas", "Shape"])
        #expect(schema.rootClass(forScope: "canvas-7")?.name == "Canvas")
        let canvas = try #require(schema.modelClass(named: "Canvas"))
        #expect(canvas.property(named: "name")?.isNullable == true)
        #expect(canvas.property(named: "shapes")?.type == .collection(.reference("Shape")))
        let shape = try #require(schema.modelClass(named: "Shape"))
        #expect(shape.properties.map(\.name) == ["x", "y", "width", "height", "color", "label", "kind"])
        #expect(shape.property(named: "width")?.defaultValue == .float(100))
        #expect(shape.property(named: "width")?.constraints.min == 0)
        #expect(shape.property(named: "color")?.type == .color)
        #expect(shape.property(named: "label")?.constraints.maxLength == 200)
        #expect(shape.property(named: "kind")?.type == .enumeration(.strings(["rect", "oval"])))
        #expect(shape.property(named: "isSelected") == nil)

        // The emitted JSON is a schema file the gateway loads back unchanged.
        let reloaded = try Schema.parse(json: Array(schema.jsonValue.encodedString().utf8))
        #expect(reloaded == schema)

        // The gateway's demo schema defines the same classes.
        for modelClass in schema.classes {
            let demoClass = try #require(Schema.demo.modelClass(named: modelClass.name))
            for property in modelClass.properties {
                let other = try #require(demoClass.property(named: property.name))
                #expect(property.type == other.type, "\(modelClass.name).\(property.name)")
                #expect(property.isNullable == other.isNullable, "\(modelClass.name).\(property.name)")
                #expect(property.defaultValue == other.defaultValue, "\(modelClass.name).\(property.name)")
                #expect(property.constraints == other.constraints, "\(modelClass.name).\(property.name)")
            }
        }
    }
}
