import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Testing

/// `fetch` against the real gateway: an unknown scope, and `createIfMissing` with local content.
@Suite("Fetch")
@MainActor
struct FetchTests {
    @Test("an unknown scope is a clear error; createIfMissing keeps the local objects and sends them")
    func createIfMissing() async throws {
        try await LiveHarness.run { live in
            let client = Client(url: live.gateway.url)
            do {
                _ = try await client.fetch(Scope(name: live.scopeName, root: Canvas()))
                Issue.record("fetch of an unknown scope succeeded")
            } catch let error as ClientError {
                guard case .notFound = error else {
                    Issue.record("expected notFound, got \(error)")
                    return
                }
            }

            let canvas = Canvas()
            canvas.name = "made here"
            let shape = Shape()
            shape.label = "local"
            canvas.shapes.append(shape)
            let ada = try await live.peer(canvas: canvas, createIfMissing: true)
            #expect(ada.canvas.shapes.map(\.uuid) == [shape.uuid], "the local objects stay")
            #expect(shape.scope === ada.scope)
            let bob = try await live.peer()
            try await Poll.until("bob gets ada's first set (bob: \(bob.summary))") {
                bob.canvas.shapes.first?.label == "local"
            }
            #expect(bob.canvas.name == "made here")
            guard try await Self.waitForCreatorsEcho(ada) else { return }
            try await live.waitUntilConverged([ada, bob])
        }
    }

    @Test("the creator's first set is confirmed by its stream, also when the stream opens while it commits")
    func creatorsEchoRace() async throws {
        try await LiveHarness.run { live in
            for round in 0..<10 {
                let canvas = Canvas()
                let shape = Shape()
                shape.label = "round \(round)"
                canvas.shapes.append(shape)
                let peer = try await live.peer(
                    scope: "\(live.scopeName)-\(round)", canvas: canvas, createIfMissing: true)
                try await Self.waitForCreatorsEcho(peer)
            }
        }
    }

    /// Waits for the creator's first set to be confirmed (version 1, nothing pending). The sync
    /// opens its stream and POSTs that set at once, so the stream often subscribes while the set
    /// commits: the gateway must still send version 1 on it (a subscription joins the broadcast
    /// group before any later publication is queued: `EventBroadcaster.add(_:catchUp:)`).
    /// Returns whether it was confirmed.
    @discardableResult
    static func waitForCreatorsEcho(_ peer: Peer) async throws -> Bool {
        do {
            try await Poll.until("the creator's set is confirmed (\(peer.summary))", within: .seconds(10)) {
                peer.sync.pendingCount == 0 && peer.sync.version == 1
            }
            return true
        } catch {
            Issue.record(
                "version 1 never reached the creator's stream: \(peer.transport.streamedText.debugDescription)")
            return false
        }
    }
}
