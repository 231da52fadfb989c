import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Testing

// The original jetstream-ios README's snippets, in its order, as close to verbatim as Swift 6
// allows; each adaptation says what it changed. They use the original's spellings, which compile
// through the deprecated shims in Sources/Clients/Jetstream/Deprecated and Sources/Clients/JetstreamClient/Deprecated
// (so this file warns, on purpose, and stops compiling when a shim goes), and each test checks that
// the spelling does what today's API does. docs/porting-from-jetstream.md maps every name.

/// "Quick start": the view controller observes the canvas's shapes-collection. (`UIViewController`
/// is a stand-in; the README's `func init()` with an undeclared `canvas` is an initialiser taking it.)
final class CanvasViewController {
    let view = View()
    var model: Canvas

    init(canvas: Canvas) {
        model = canvas
        canvas.observeCollectionAdd(self, key: "shapes") { (element: Shape) in
            // A new shape was just added to our shapes-collection.
            self.view.addChild(ShapeView(shape: element))
        }
    }
}

/// "Quick start": a view per shape that follows its shape. (`{{x, y}, {w, h}}` is a `Frame`; the
/// README called `removeFromParentView()` without `self.`, which a Swift closure needs.)
final class ShapeView: View {
    let shape: Shape

    init(shape: Shape) {
        self.shape = shape
        super.init()
        shape.observeChange(self, keys: ["x", "y", "width", "height"]) {
            self.frame = Frame(x: shape.x, y: shape.y, width: shape.width, height: shape.height)
        }
        shape.observeChange(self, key: "color") {
            self.backgroundColor = shape.color
        }
        shape.observeDetach(self) {
            // The shape model instance has been removed from the scope
            self.removeFromParentView()
        }
    }
}

@MainActor
@Suite("The original README's snippets")
final class OriginalReadmeTests {
    var session: Session?

    @Test("Scope(name:) then scope.root = canvas: the canvas is the root, its subtree joins, changes are recorded")
    func scopeRoot() throws {
        var canvas = Canvas()

        var scope = Scope(name: "Canvas")
        scope.root = canvas

        #expect(scope.root === canvas && canvas.scope === scope && canvas.isScopeRoot)
        #expect(scope.name == "Canvas" && scope.objectCount == 1)
        var recorded: [RecordedChangeSet] = []
        scope.onChanges { recorded.append($0) }
        let shape = Shape()
        canvas.shapes.append(shape)
        scope.flush()
        #expect(shape.scope === scope)
        #expect(recorded.count == 1 && recorded[0].fragments.map(\.type) == [.add, .change])
        // The remote side of the same scope builds its objects by class from the root's class.
        #expect(try scope.schema().modelClass(named: "Shape") != nil)
    }

    @Test("A scope's root is assigned once: a second root stops the program instead of being ignored")
    func secondRootStops() async {
        await #expect(processExitsWith: .failure) {
            let scope = Scope(name: "Canvas")
            scope.root = Canvas()
            scope.root = Canvas()
        }
    }

    @Test("observeAttach and observeDetach with closures that take no scope fire as today's do")
    func closuresWithoutScope() {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas", root: canvas)
        let shape = Shape()
        var fired: [String] = []
        shape.observeAttach(self) { fired.append("attach") }
        shape.observeDetach(self) { fired.append("detach") }
        scope.modify { canvas.shapes.append(shape) }
        scope.modify { canvas.shapes.removeAll() }
        #expect(fired == ["attach", "detach"])
    }

    @Test("canvas.setScopeAndMakeRootModel(scope): the original's other way to give a scope its root")
    func setScopeAndMakeRootModel() {
        let canvas = Canvas()
        canvas.shapes.append(Shape())
        let scope = Scope(name: "Canvas")
        canvas.setScopeAndMakeRootModel(scope)
        #expect(scope.root === canvas && scope.objectCount == 2)
    }

    @Test("Quick start: a view per added shape, redrawn once per batch, gone when its shape is detached")
    func quickStartViews() throws {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas")
        scope.root = canvas
        let controller = CanvasViewController(canvas: canvas)

        let shape = Shape()
        scope.modify { canvas.shapes.append(shape) }
        let view = try #require(controller.view.children.first as? ShapeView)
        #expect(view.shape === shape)

        scope.modify {
            shape.x = 10
            shape.y = 20
            shape.color = Color(red: 0, green: 0, blue: 255)
        }
        #expect(view.frame == Frame(x: 10, y: 20, width: 100, height: 100))
        #expect(view.backgroundColor == Color(red: 0, green: 0, blue: 255))

        scope.modify { canvas.shapes.removeAll() }
        #expect(controller.view.children.isEmpty)
    }

    @Test("Observation: the change, collection, tree, attach and parent observers of the README")
    func observation() {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas")
        scope.root = canvas
        let model = Shape()
        var fired: [String] = []

        // Observe scope attachments and detachments
        model.observeAttach(self) { (scope: Scope) in fired.append("attach") }  // Attached to a scope
        model.observeDettach(self) { (scope: Scope) in fired.append("detach") }  // Detached to a scope
        // Added to a parent
        model.observeAddedToParent(self) { (parent: ModelObject, key: String) in fired.append("added to \(key)") }
        // Removed from a parent
        model.observeRemovedFromParent(self) { (parent: ModelObject, key: String) in
            fired.append("removed from \(key)")
        }
        // Observe property changes on models
        model.observeChange(self) { fired.append("change") }  // Observe all changes
        model.observeChange(self, key: "width") { fired.append("width") }  // Observe a single property
        model.observeChange(self, keys: ["width", "height"]) { fired.append("width or height") }
        // Observe property changes on models without queueing them up
        model.observeChangeImmediately(self, key: "width") { fired.append("width now") }
        // Observe collection changes
        canvas.observeCollectionAdd(self, key: "shapes") { (element: Shape) in fired.append("shape in") }
        canvas.observeCollectionRemove(self, key: "shapes") { (element: Shape) in fired.append("shape out") }
        // Observe changes of an entire model object and its children
        canvas.observeTreeChange(self) { fired.append("tree") }  // Tree has changed

        scope.modify { canvas.shapes.append(model) }
        #expect(fired == ["added to shapes", "attach", "shape in", "tree"])
        fired = []
        scope.modify {
            model.width = 50
            model.height = 60
        }
        #expect(fired == ["width now", "change", "width", "width or height", "tree"])

        // Cancel a single observation
        var cancelObservation = canvas.observeTreeChange(self) { fired.append("second tree") }
        cancelObservation()  // Cancels the observation
        model.removeObserver(self)
        fired = []
        scope.modify { canvas.shapes.removeAll() }
        #expect(fired == ["shape out", "tree"])

        let other = Shape()
        other.observeDettach(self) { (scope: Scope) in fired.append("detach from \(scope.name)") }
        scope.modify { canvas.shapes.append(other) }
        fired = []
        scope.modify { canvas.shapes.removeAll() }
        #expect(fired.sorted() == ["detach from Canvas", "shape out", "tree"])
        cancelObservation = {}
    }

    @Test("Reading changes: scope.onChanges.listen delivers each recorded change set while the listener lives")
    func onChangesListen() {
        let canvas = Canvas()
        let scope = Scope(name: "Canvas")
        scope.root = canvas
        var delivered: [[SyncFragment]] = []

        // Listening to changes
        scope.onChanges.listen(self) { fragments in
            // fragments is an Array of SyncFragments that describe the changes that happened
            delivered.append(fragments.fragments)
        }

        canvas.name = "Sketch"
        scope.flush()
        #expect(delivered.count == 1 && delivered[0].first?.properties["name"] == .string("Sketch"))

        var listener: AnyObject? = View()
        var once = 0
        scope.onChanges.listenOnce(listener!) { _ in once += 1 }
        scope.modify { canvas.name = "A" }
        scope.modify { canvas.name = "B" }
        #expect(once == 1 && delivered.count == 3)
        var always = 0
        scope.onChanges.listen(listener!) { _ in always += 1 }
        scope.modify { canvas.name = "C" }
        listener = nil  // a listener that is gone hears nothing more
        scope.modify { canvas.name = "D" }
        #expect(always == 1 && delivered.count == 5)
    }

    @Test(
        "Atomic ChangeSets: createAtomicChangeSet is modifyAtomically (one atomic set; a throwing body leaves nothing)")
    func createAtomicChangeSet() throws {
        let cart = Cart()
        let scope = Scope(name: "Cart", root: cart)
        let newItem = Item()
        newItem.price = 5
        var sets: [RecordedChangeSet] = []
        scope.onChanges { sets.append($0) }

        // Creating atomic transactions
        // swift-format-ignore: the README's spelling, parentheses included
        scope.createAtomicChangeSet {
            cart.items.append(newItem)
            cart.totalPrice += newItem.price
        }

        #expect(sets.count == 1 && sets[0].isAtomic && sets[0].fragments.count == 2)
        #expect(cart.items.count == 1 && cart.totalPrice == 5)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try scope.createAtomicChangeSet {
                cart.totalPrice = 99
                throw Refused()
            }
        }
        #expect(cart.totalPrice == 5 && sets.count == 1)
    }

    @Test("Applying changes: fragments another scope recorded apply here; serialize/unserialize round-trips them")
    func applyAndSerialize() throws {
        let source = Canvas()
        let sourceScope = Scope(name: "Canvas", root: source)
        let canvas = Canvas(uuid: source.uuid)
        let scope = Scope(name: "Canvas")
        scope.root = canvas
        var recorded: [SyncFragment] = []
        sourceScope.onChanges { recorded += $0.fragments }
        let shape = Shape()
        sourceScope.modify {
            shape.x = 7
            source.shapes.append(shape)
        }

        // Apply sync fragments (the README wrote [SyncFragments]; Swift needs `try` for a call
        // that can refuse fragments)
        var fragments = [SyncFragment]()
        fragments = recorded.map { syncFragment in SyncFragment.unserialize(syncFragment.serialize())! }
        try scope.applySyncFragments(fragments)  // Applies the changes to your model

        // A dictionary has no member order, so compare what each fragment says, not its bytes.
        #expect(fragments.map(\.uuid) == recorded.map(\.uuid) && fragments.map(\.type) == recorded.map(\.type))
        #expect(fragments.map { Set($0.properties.map(\.key)) } == recorded.map { Set($0.properties.map(\.key)) })
        #expect(canvas.shapes.count == 1 && canvas.shapes[0].x == 7)
        #expect(scope.getObjectById(shape.uuid) === canvas.shapes[0])
        #expect(scope.getObjectByIdString(shape.uuid.uuidString) === canvas.shapes[0])
        #expect(fragments[0].objectUUID == shape.uuid)
        let dictionary = fragments[0].serialize()
        #expect(dictionary["type"] as? String == "add" && dictionary["clsName"] as? String == "Shape")
        #expect(dictionary["uuid"] as? String == shape.uuid.uuidString.lowercased())
        #expect(SyncFragment.unserialize(["type": "remove", "uuid": "x", "clsName": "Shape"]) == nil)
    }

    /// "Synchronization", compiled as written (adapted: `new Scope("ShapesCanvas")` is
    /// `Scope(name: "ShapesCanvas")`, and the scope a local). Not called: it needs a server;
    /// `sessionFetchesOverHTTP` runs the same calls.
    func synchronizationSnippet() {
        // Synchronizing a scope
        let scope = Scope(name: "ShapesCanvas")
        if let client = Client(options: WebsocketConnectionOptions(url: "ws://localhost")) {
            client.connect()
            client.onSession.listenOnce(self) { (session) in
                self.session = session
                session.fetch(scope) { (error) in
                    if error == nil {
                        // Registered to receive updates to the scope from the Jetstream server
                    }
                }
            }
        }
    }

    @Test("Synchronization: connect() makes the session onSession delivers; session.fetch is client.fetch over HTTP")
    func sessionFetchesOverHTTP() async throws {
        let client = try #require(Client(options: WebsocketConnectionOptions(url: "ws://127.0.0.1:1")))
        #expect(client.url.absoluteString == "http://127.0.0.1:1")
        var outcome: ClientError?? = .none
        let scope = Scope(name: "ShapesCanvas")
        scope.root = Canvas()

        client.connect()
        client.onSession.listenOnce(self) { (session) in
            self.session = session
            session.fetch(scope) { (error) in outcome = .some(error) }
        }
        #expect(session == nil)  // delivered on a later turn, as the original's handshake answer was
        try await waitUntil { outcome != nil }

        #expect(session === client.session && session?.client.url == client.url)
        guard case .some(.some(.unreachable)) = outcome else {
            Issue.record("a fetch with nothing listening fails as client.fetch does: \(String(describing: outcome))")
            return
        }
        #expect(session?.syncs.isEmpty == true)
        client.close()
        #expect(client.session == nil)
    }

    @Test("Client(options:): ws becomes http, wss https; another scheme is no client")
    func clientOptions() throws {
        let plain = try #require(Client(options: WebsocketConnectionOptions(url: "ws://localhost:3000/path")))
        #expect(plain.url.absoluteString == "http://localhost:3000/path")
        let secure = try #require(Client(options: WebSocketConnectionOptions(url: URL(string: "wss://example.com")!)))
        #expect(secure.url.absoluteString == "https://example.com")
        #expect(Client(options: WebsocketConnectionOptions(url: "ftp://example.com")) == nil)
    }

    /// Polls `condition` on the main actor for up to 10 s.
    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "timed out")
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
