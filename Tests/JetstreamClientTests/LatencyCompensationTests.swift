import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Testing

/// Latency compensation (docs/sync-protocol.md) against the real gateway, with Ada's POSTs held
/// by her transport until the test releases them, so that what she sees before the server answers
/// can be checked however slow the machine is.
@Suite("Latency compensation")
@MainActor
struct LatencyCompensationTests {
    /// Ada (POSTs held) and Bob on a canvas that starts with the shapes `labels`.
    static func canvas(_ live: LiveHarness, labels: [String]) async throws -> (ada: Peer, bob: Peer) {
        try await live.seed(labels: labels)
        let ada = try await live.peer()
        let bob = try await live.peer()
        try await live.waitUntilConverged([ada, bob])
        ada.transport.holdPosts()
        return (ada, bob)
    }

    @Test("a local change shows at once, is pending until the echo, and its observer fires once")
    func localChangeVisibleAtOnceAndEchoAppliedOnce() async throws {
        try await LiveHarness.run { live in
            let (ada, bob) = try await Self.canvas(live, labels: ["a"])
            let shape = ada.canvas.shapes[0]
            var fired = 0
            shape.observeChange(ada, key: \.x) { fired += 1 }
            let versionBefore = ada.sync.version

            ada.scope.modify { shape.x = 42 }
            #expect(shape.x == 42)
            #expect(fired == 1, "the observer fired for the local change")
            #expect(ada.sync.pendingCount >= 1)
            #expect(ada.sync.version == versionBefore)
            let early = try await live.serverState()
            #expect(try CanvasSnapshot(early).shapes[0].x == 0, "the server does not have it yet (POST held)")
            #expect(ada.sync.pendingCount >= 1, "still pending while the POST waits")
            ada.transport.releasePosts()

            try await Poll.until("ada's change is confirmed (ada: \(ada.summary))") { ada.sync.pendingCount == 0 }
            #expect(ada.sync.version == versionBefore + 1)
            try await Poll.until("bob sees x = 42") { bob.canvas.shapes.first?.x == 42 }
            try await live.waitUntilConverged([ada, bob])
            #expect(fired == 1, "the own echo is not applied again")
            #expect(ada.transport.eventCount("changeset") >= 1, "the echo did arrive on ada's stream")
            #expect(ada.rejections.isEmpty)
        }
    }

    @Test("a change the schema refuses is reverted at once and reported as local; nothing is sent")
    func locallyInvalidChangeIsRevertedAtOnce() async throws {
        try await LiveHarness.run { live in
            let (ada, _) = try await Self.canvas(live, labels: ["a"])
            let shape = ada.canvas.shapes[0]
            var widths: [Float] = []
            shape.observeChange(ada, key: \.width) { widths.append(shape.width) }

            ada.scope.modify { shape.width = -5 }
            #expect(shape.width == 100, "reverted before modify returns")
            #expect(ada.sync.pendingCount == 0)
            let rejection = try #require(ada.rejections.first)
            #expect(ada.rejections.count == 1)
            #expect(rejection.isLocal)
            #expect(rejection.status == 422)
            #expect(rejection.idempotencyKey == nil)
            #expect(rejection.replies.count == rejection.fragments.count)
            #expect(rejection.replies.first?.error?.kind == .outOfRange)
            #expect(rejection.replies.first?.error?.property == "width")
            #expect(rejection.reasons.contains { $0.hasPrefix("width:") }, "\(rejection.reasons)")
            #expect(widths.last == 100, "observers saw the value come back")

            // A 300-character label, in a set with a valid edit: the whole set goes back.
            ada.scope.modify {
                shape.x = 7
                shape.label = String(repeating: "x", count: 300)
            }
            #expect(shape.x == 0 && shape.label == "a")
            #expect(ada.localRejections.count == 2)
            #expect(ada.localRejections.last?.reasons.contains { $0.hasPrefix("label:") } == true)
            #expect(ada.transport.answers.isEmpty, "nothing was sent")
            try await live.waitUntilConverged([ada])
        }
    }

    @Test("a set the server refuses (its shape was removed meanwhile) springs back, with per-fragment reasons")
    func serverRefusalSpringsBack() async throws {
        try await LiveHarness.run { live in
            let (ada, bob) = try await Self.canvas(live, labels: ["doomed", "kept"])
            let doomed = ada.canvas.shapes[0]
            let kept = ada.canvas.shapes[1]
            // Ada moves 'doomed' and relabels 'kept' in one set; her POST is held.
            ada.scope.modify {
                doomed.x = 500
                kept.label = "relabelled by ada"
            }
            #expect(kept.label == "relabelled by ada" && doomed.x == 500)
            // Meanwhile Bob removes 'doomed'; his set reaches the server first.
            bob.canvas.shapes.remove(at: 0)
            // Ada's set no longer applies on the server's state: its effect leaves her view at
            // once (the rebase), before the server has even answered.
            try await Poll.until("ada's view drops her set on bob's removal (ada: \(ada.summary))") {
                ada.canvas.shapes.count == 1
            }
            #expect(kept.label == "kept", "the relabel springs back with the rest of the set")
            #expect(ada.sync.pendingCount == 1, "still pending: the server has not answered")
            #expect(ada.rejections.isEmpty)
            ada.transport.releasePosts()

            try await Poll.until("the server refuses ada's set (ada: \(ada.summary))") { !ada.rejections.isEmpty }
            let rejection = try #require(ada.rejections.first)
            #expect(!rejection.isLocal)
            #expect(rejection.status == 422)
            #expect(rejection.idempotencyKey != nil)
            #expect(rejection.replies.count == rejection.fragments.count, "one reply per fragment")
            for (fragment, reply) in zip(rejection.fragments, rejection.replies) {
                if fragment.uuid == doomed.uuid {
                    #expect(reply.error?.kind == .unknownObject, "\(reply)")
                } else {
                    #expect(reply.error == nil, "the relabel itself was fine: \(reply)")
                }
            }
            #expect(!rejection.reasons.isEmpty)
            #expect(ada.sync.pendingCount == 0)
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.snapshot.shapes.map(\.label) == ["kept"])
        }
    }

    @Test("a remote change arriving while local sets are pending is rebased, not lost")
    func remoteChangeWhilePendingIsRebased() async throws {
        try await LiveHarness.run { live in
            let (ada, bob) = try await Self.canvas(live, labels: ["shared"])
            let adasShape = ada.canvas.shapes[0]
            let bobsShape = bob.canvas.shapes[0]
            let adaNew = Shape()
            adaNew.label = "ada's"
            ada.scope.modify { adasShape.label = "labelled by ada" }
            ada.canvas.shapes.append(adaNew)
            ada.scope.flush()
            #expect(ada.sync.pendingCount == 2)

            let bobNew = Shape()
            bobNew.label = "bob's"
            bob.scope.modify {
                bobsShape.y = 77
                bob.canvas.shapes.insert(bobNew, at: 0)
            }
            // Bob's set arrives while Ada's two are still pending: both effects are in her view.
            try await Poll.until("ada sees bob's change (ada: \(ada.summary))") { adasShape.y == 77 }
            #expect(ada.sync.pendingCount >= 1, "ada's sets were still pending")
            #expect(adasShape.label == "labelled by ada", "ada's pending label stays on top")
            #expect(ada.canvas.shapes.map(\.label) == ["bob's", "labelled by ada", "ada's"])

            ada.transport.releasePosts()
            try await live.waitUntilConverged([ada, bob])
            let server = try CanvasSnapshot(try await live.serverState())
            #expect(server.shapes.map(\.label) == ["bob's", "labelled by ada", "ada's"])
            #expect(server.shapes[1].y == 77)
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty)
        }
    }
}
