import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Testing

/// Two typed clients on one scope against the real gateway: what one does arrives in the other
/// through the documented observers, and both end equal to the server's state.
@Suite("Two typed clients on one scope")
@MainActor
struct TwoClientsTests {
    @Test("appends, moves, reorders and removals flow both ways through the observers")
    func editsFlowBothWays() async throws {
        try await LiveHarness.run { live in
            let adaCanvas = Canvas()
            adaCanvas.name = "Sketch"
            let ada = try await live.peer(canvas: adaCanvas, createIfMissing: true)
            let bob = try await live.peer()
            try await Poll.until("both streams are live") { ada.sync.status == .live && bob.sync.status == .live }
            #expect(bob.canvas.name == "Sketch")
            #expect(bob.canvas.uuid == ada.canvas.uuid, "the root takes the server's root UUID")

            var adaAdded: [Shape] = []
            var bobAdded: [Shape] = []
            var adaRemoved: [UUID] = []
            var bobRemoved: [UUID] = []
            ada.canvas.observeCollectionAdd(ada, key: \.shapes) { shape in adaAdded.append(shape) }
            bob.canvas.observeCollectionAdd(bob, key: \.shapes) { shape in bobAdded.append(shape) }
            ada.canvas.observeCollectionRemove(ada, key: \.shapes) { shape in adaRemoved.append(shape.uuid) }
            bob.canvas.observeCollectionRemove(bob, key: \.shapes) { shape in bobRemoved.append(shape.uuid) }

            // Ada appends: Bob's add observer gets a typed Shape with Ada's values.
            let one = Shape()
            one.label = "one"
            one.x = 10
            one.kind = .oval
            ada.canvas.shapes.append(one)
            #expect(adaAdded.map(\.uuid) == [one.uuid], "the local append fires the local observer at once")
            try await Poll.until("bob sees 'one' (bob: \(bob.summary))") { bobAdded.count == 1 }
            let bobsOne = try #require(bobAdded.first)
            #expect(bobsOne.uuid == one.uuid)
            #expect(bobsOne.label == "one" && bobsOne.x == 10 && bobsOne.kind == .oval)
            #expect(bobsOne.scope === bob.scope)

            // Bob appends: Ada's add observer.
            let two = Shape()
            two.label = "two"
            bob.canvas.shapes.append(two)
            try await Poll.until("ada sees 'two' (ada: \(ada.summary))") { adaAdded.count == 2 }
            let adasTwo = try #require(ada.shape(two.uuid))
            #expect(adaAdded.last === adasTwo)
            #expect(ada.canvas.shapes.map(\.uuid) == [one.uuid, two.uuid])

            // Ada moves Bob's shape (one change set, two properties): Bob's observer fires once.
            var bobMoves = 0
            two.observeChange(bob, keys: [\.x, \.y]) { bobMoves += 1 }
            ada.scope.modify {
                adasTwo.x = 50
                adasTwo.y = 60
            }
            try await Poll.until("bob sees 'two' moved (bob: \(bob.summary))") { two.x == 50 && two.y == 60 }
            #expect(bobMoves == 1, "one notification per applied change set")

            // Bob edits Ada's shape: Ada's observer on it.
            var adaEdits = 0
            one.observeChange(ada, key: \.label) { adaEdits += 1 }
            bobsOne.label = "one, renamed by bob"
            try await Poll.until("ada sees the new label (ada: \(ada.summary))") { one.label == "one, renamed by bob" }
            #expect(adaEdits == 1)

            // Ada reorders: Bob's observer on the collection; the elements stay.
            var bobReorders = 0
            let bobAddsBefore = bobAdded.count
            bob.canvas.observeChange(bob, key: \.shapes) { bobReorders += 1 }
            ada.canvas.shapes = [adasTwo, one]
            try await Poll.until("bob sees the new order (bob: \(bob.summary))") {
                bob.canvas.shapes.map(\.uuid) == [two.uuid, one.uuid]
            }
            #expect(bobReorders == 1)
            #expect(bobRemoved.isEmpty && bobAdded.count == bobAddsBefore, "a reorder neither removes nor adds")
            #expect(bobsOne.scope === bob.scope && two.scope === bob.scope)

            // Both append at once: both shapes end on both canvases (operations, not whole arrays).
            let adaThree = Shape()
            adaThree.label = "three (ada)"
            let bobThree = Shape()
            bobThree.label = "three (bob)"
            ada.canvas.shapes.append(adaThree)
            bob.canvas.shapes.append(bobThree)
            try await Poll.until("both see both new shapes (ada: \(ada.summary); bob: \(bob.summary))") {
                ada.canvas.shapes.count == 4 && bob.canvas.shapes.count == 4
            }

            // Bob removes 'one': Ada's remove observer, and the object leaves Ada's scope.
            bob.canvas.shapes.removeAll { $0.uuid == one.uuid }
            try await Poll.until("ada sees 'one' removed (ada: \(ada.summary))") { adaRemoved == [one.uuid] }
            #expect(one.scope == nil)
            #expect(ada.scope.getObject(one.uuid) == nil)

            try await live.waitUntilConverged([ada, bob])
            #expect(ada.snapshot == bob.snapshot)
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty, "\(ada.rejections) \(bob.rejections)")
        }
    }
}
