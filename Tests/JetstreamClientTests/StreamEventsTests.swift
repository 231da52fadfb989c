import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Testing

/// The stream's control events against the real gateway: `reset` after a resume point the
/// history no longer holds, `deleted`, and `auth-expired` with a token provider.
@Suite("Stream events: reset, deleted, auth-expired")
@MainActor
struct StreamEventsTests {
    @Test("a resume point older than the history gets a reset, and the client converges")
    func resetAfterTooOldResumePoint() async throws {
        try await LiveHarness.run(["--history-limit", "3"]) { live in
            try await live.seed(labels: ["first"])
            let ada = try await live.peer()
            let bob = try await live.peer()
            try await live.waitUntilConverged([ada, bob])

            // Ada's stream drops and cannot come back for a while.
            ada.transport.failStreams(.max)
            ada.transport.cutStreams()
            try await Poll.until("ada's stream is down (\(ada.summary))") { ada.sync.status != .live }
            // She edits meanwhile (her POSTs still go through); Bob writes five sets.
            ada.scope.modify { ada.canvas.shapes[0].label = "edited by ada while away" }
            for index in 0..<5 {
                let shape = Shape()
                shape.label = "bob \(index)"
                bob.scope.modify { bob.canvas.shapes.append(shape) }
                try await Poll.until("bob's set \(index) is confirmed") { bob.sync.pendingCount == 0 }
            }
            #expect(ada.canvas.shapes.count == 1, "ada has not heard of bob's shapes")
            let versionAway = ada.sync.version
            #expect(try await live.serverState().version >= versionAway + 5)

            ada.transport.failStreams(0)
            try await live.waitUntilConverged([ada, bob])
            #expect(
                ada.transport.eventCount("reset") == 1, "the resume point was too old: \(ada.transport.streamedText)")
            // Before it applied the reset she asked whether the schema changed: it had not.
            let schemaReads = ada.transport.exchanges("GET /v1/schema")
            #expect(schemaReads.map(\.status) == [200, 304])
            #expect(schemaReads.last?.headers["If-None-Match"] != nil)
            #expect(ada.canvas.shapes.map(\.label) == ["edited by ada while away"] + (0..<5).map { "bob \($0)" })
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty)
        }
    }

    @Test("DELETE of the scope stops the sync with reason deleted")
    func deletedStopsTheSync() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer()
            try await Poll.until("ada is live") { ada.sync.status == .live }
            #expect(try await live.api.delete(live.scopeName) == 204)
            try await Poll.until("ada's sync stops (\(ada.summary))") { ada.sync.status == .stopped(reason: .deleted) }
            #expect(ada.transport.eventCount("deleted") == 1)
            #expect(ada.statuses.last == .stopped(reason: .deleted))

            // A stopped sync sends nothing more.
            ada.canvas.shapes.append(Shape())
            ada.scope.flush()
            try await Task.sleep(for: .milliseconds(200))
            #expect(ada.sync.pendingCount == 0)
            #expect(ada.transport.answers.isEmpty)
            #expect(ada.sync.status == .stopped(reason: .deleted))
        }
    }

    @Test("tokens that expire every 2 s: 401 and auth-expired ask the provider again, the sync stays live")
    func tokenRefreshOnAuthExpired() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-secret-\(UUID())")
        let secret = "a shared secret of well over thirty-two bytes for HS256"
        try Data(secret.utf8).write(to: secretFile)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let minter = await TokenMinter(secret: secret)
        let provider: Client.TokenProvider = { try await minter.mint(lifetime: 2) }

        try await LiveHarness.run(["--jwt-secret-file", secretFile.path], token: provider) { live in
            // Without a token the scope is closed.
            let anonymous = try await ServerAPI(url: live.gateway.url).request("GET", "/v1/scopes/demo")
            #expect(anonymous.status == 401)

            try await live.seed(labels: ["a"])
            // Ada's first token is already expired: the 401 makes the client ask again.
            await minter.expireNext(1)
            let ada = try await live.peer()
            let bob = try await live.peer()
            try await Poll.until("both are live") { ada.sync.status == .live && bob.sync.status == .live }
            // On a loaded machine becoming live can take longer than a token lives: an auth-expired
            // may already have been seen, its new token minted before or after this point.
            let minted = await minter.minted
            let expired = ada.transport.eventCount("auth-expired")

            try await Poll.until(
                "ada's stream is told auth-expired three more times (\(ada.summary))\n\(ada.transport.streamedText)",
                within: .seconds(25)
            ) {
                // The third event arrives on the connection opened with the token minted after the
                // second, and the second's on the one opened after the first: two mints since `minted`.
                ada.transport.eventCount("auth-expired") >= expired + 3 && ada.sync.status == .live
            }
            #expect(await minter.minted >= minted + 2, "the provider was asked for new tokens")

            // Still live: changes flow both ways with the fresh tokens.
            bob.scope.modify { bob.canvas.shapes[0].label = "from bob, later" }
            try await Poll.until("ada sees bob's label") { ada.canvas.shapes[0].label == "from bob, later" }
            ada.scope.modify { ada.canvas.shapes[0].x = 12 }
            try await Poll.until("bob sees ada's move") { bob.canvas.shapes[0].x == 12 }
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty)
            #expect(!ada.statuses.contains { if case .stopped = $0 { true } else { false } })
        }
    }

    @Test("a token provider with only refused tokens left does not make the stream spin: 401 backs off")
    func refusedTokensBackOff() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-secret-\(UUID())")
        let secret = "another shared secret of well over thirty-two bytes"
        try Data(secret.utf8).write(to: secretFile)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let minter = await TokenMinter(secret: secret)
        let provider: Client.TokenProvider = { try await minter.mint(lifetime: 2) }

        try await LiveHarness.run(["--jwt-secret-file", secretFile.path], token: provider) { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer(backoff: Backoff(initial: .milliseconds(500), maximum: .milliseconds(500)))
            try await Poll.until("ada is live") { ada.sync.status == .live }
            // From now on every token the provider hands out is already expired.
            await minter.expireNext(.max)
            try await Poll.until("ada's token expires (\(ada.summary))", within: .seconds(10)) {
                ada.transport.eventCount("auth-expired") >= 1
            }
            let before = ada.transport.streamRequests.count
            let started = ContinuousClock.now
            // It backs off (an attempt counted), and does not spin meanwhile: with a 500 ms
            // backoff a few requests a second at most, however long the wait took.
            try await Poll.until("ada backs off (\(ada.statuses.suffix(4)))", within: .seconds(20)) {
                ReconnectionTests.attempts(ada.statuses).contains { $0 >= 1 }
            }
            let seconds = Double((ContinuousClock.now - started).components.seconds) + 2
            let during = ada.transport.streamRequests.count - before
            #expect(
                Double(during) <= 12.5 * seconds,
                "\(during) stream requests in \(seconds) s with refused tokens: reconnecting at once in a loop")

            // Good tokens again: live, and changes flow.
            await minter.expireNext(0)
            try await Poll.until("ada is live again (\(ada.summary))") { ada.sync.status == .live }
            ada.scope.modify { ada.canvas.shapes[0].label = "back" }
            try await live.waitUntilConverged([ada])
        }
    }
}
