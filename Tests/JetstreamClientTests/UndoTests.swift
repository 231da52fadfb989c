import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import Testing

/// `sync.undo()` and `sync.restore(toVersion:)` against the real gateway: what an undo reverts is
/// judged by the server (`POST …/changesets/{V}/revert`), and every peer ends at the server's state.
@Suite("Undo and restore, live")
@MainActor
struct UndoTests {
    @Test("undo twice reverts two different own sets, most recent first; a third finds nothing")
    func undoTwice() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["s", "t"])
            let ada = try await live.peer(clientID: "ada")
            let bob = try await live.peer()
            let s = ada.canvas.shapes[0]
            let t = ada.canvas.shapes[1]
            s.x = 40
            try await live.waitUntilConverged([ada, bob])
            t.label = "renamed"
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.sync.undoableCount == 2)
            let own = try await ownVersions(live, "ada")

            let first = try #require(try await ada.sync.undo())
            #expect(first.revertOf == own[1], "the most recent own set: the label")
            #expect(first.skipped.isEmpty)
            #expect(t.label == "t" && s.x == 40, "the label is back at once, the move stays")

            let second = try #require(try await ada.sync.undo())
            #expect(second.revertOf == own[0], "the next undo reverts the move, not the first undo")
            #expect(second.version > first.version)
            #expect(s.x == 0)
            #expect(try await ada.sync.undo() == nil, "nothing left: an undo's own revert is never undone")
            #expect(ada.sync.undoableCount == 0)

            try await live.waitUntilConverged([ada, bob])
            let server = try await live.serverState()
            #expect(try CanvasSnapshot(server).shapes.map(\.label) == ["s", "t"])
            #expect(bob.canvas.shapes.map(\.x) == [0, 0])
        }
    }

    @Test("an own set whose answer was lost, but whose echo came on the stream, can be undone")
    func undoAfterLostAnswer() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["s"])
            let transport = FaultyTransport()
            let ada = try await live.peer(transport: transport, clientID: "ada")
            transport.loseAnswers(1)
            transport.holdLostAnswers()
            ada.canvas.shapes[0].x = 40
            // The server applied the move; its echo reaches Ada while the POST's answer is lost.
            try await Poll.until("the move's echo applied while its answer is held", within: .seconds(20)) {
                let server = try await live.serverState()
                return transport.heldLostAnswerCount == 1 && ada.sync.version == server.version
            }
            transport.releaseLostAnswers()
            try await live.waitUntilConverged([ada])
            #expect(try await ownVersions(live, "ada").count == 1, "the move is in the log once")
            #expect(ada.sync.undoableCount == 1, "the echo told Ada her move was accepted")
            let undone = try #require(try await ada.sync.undo())
            #expect(ada.canvas.shapes[0].x == 0)
            #expect(undone.skipped.isEmpty)
        }
    }

    @Test("undo of an add removes the object, here and for the others")
    func undoAdd() async throws {
        try await LiveHarness.run { live in
            let ada = try await live.peer(createIfMissing: true)
            let bob = try await live.peer()
            let shape = Shape()
            shape.label = "added"
            ada.canvas.shapes.append(shape)
            // No wait: undo waits for the add to be answered itself.
            let undone = try #require(try await ada.sync.undo())
            #expect(undone.skipped.isEmpty)
            #expect(ada.canvas.shapes.isEmpty, "the add is undone at once")
            try await live.waitUntilConverged([ada, bob])
            #expect(bob.canvas.shapes.isEmpty)
        }
    }

    @Test("undo passes over an own set another client changed since, and reverts the older one")
    func undoAfterConflict() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["s", "t"])
            let ada = try await live.peer(clientID: "ada")
            let bob = try await live.peer()
            ada.canvas.shapes[0].x = 10
            try await live.waitUntilConverged([ada, bob])
            ada.canvas.shapes[1].x = 20
            try await live.waitUntilConverged([ada, bob])
            bob.canvas.shapes[1].x = 99
            try await live.waitUntilConverged([ada, bob])
            let own = try await ownVersions(live, "ada")

            let undone = try #require(try await ada.sync.undo())
            #expect(undone.revertOf == own[0], "t's move conflicts with Bob's later one: s's move is undone")
            #expect(undone.skipped.map(\.version) == [own[1]])
            #expect(undone.skipped.map(\.reason) == [.conflict])
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.canvas.shapes.map(\.x) == [0, 99], "Bob's move stays")
            #expect(try await ada.sync.undo() == nil, "the conflicting set was passed over for good")
        }
    }

    @Test("a retried undo sends the same Idempotency-Key and is applied once")
    func retriedUndo() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["s"])
            let transport = FaultyTransport()
            let ada = try await live.peer(transport: transport, clientID: "ada")
            ada.canvas.shapes[0].x = 70
            try await live.waitUntilConverged([ada])
            let own = try await ownVersions(live, "ada")
            // The revert reaches the server, its answer is lost: the sync sends it again.
            transport.loseAnswers(1)
            let undone = try #require(try await ada.sync.undo())
            #expect(undone.revertOf == own[0])
            #expect(transport.answers["ada:undo:\(own[0])"] == [200, 200], "the same key twice, replayed")
            let reverts = try await live.api.changeSets(of: live.scopeName).filter { $0["revertOf"] != nil }
            #expect(reverts.count == 1, "one revert on the server")
            try await live.waitUntilConverged([ada])
            #expect(ada.canvas.shapes[0].x == 0)
        }
    }

    @Test("restore sets the scope back to a version; undo reverts the restore")
    func restoreAndUndo() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["s"])
            let ada = try await live.peer()
            let bob = try await live.peer()
            let seeded = ada.sync.version
            bob.canvas.shapes[0].label = "bob's"
            bob.canvas.shapes.append(Shape())
            try await live.waitUntilConverged([ada, bob])

            let restored = try #require(try await ada.sync.restore(toVersion: seeded))
            #expect(ada.canvas.shapes.map(\.label) == ["s"], "the restore shows at once")
            try await live.waitUntilConverged([ada, bob])
            #expect(restored == ada.sync.version)
            #expect(try await ada.sync.restore(toVersion: seeded) == nil, "already that state: no new version")

            let undone = try #require(try await ada.sync.undo())
            #expect(undone.revertOf == restored)
            try await live.waitUntilConverged([ada, bob])
            #expect(bob.canvas.shapes.map(\.label) == ["bob's", ""])
            await #expect(throws: ClientError.self) { try await ada.sync.restore(toVersion: 1000) }
        }
    }

    /// The versions of `clientID`'s change sets in the history, oldest first (their keys start
    /// with it; the undos' keys have `:undo:` in them).
    private func ownVersions(_ live: LiveHarness, _ clientID: String) async throws -> [Int] {
        try await live.api.changeSets(of: live.scopeName).compactMap { changeSet in
            guard let key = changeSet["idempotencyKey"]?.string, key.hasPrefix("\(clientID):"),
                !key.contains(":undo:"), let version = changeSet["version"]?.number?.int64Value
            else { return nil }
            return Int(version)
        }
    }
}
