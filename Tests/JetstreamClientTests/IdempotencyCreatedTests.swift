import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Testing

/// Each local change set says when it was made (`Idempotency-Key-Created`), the same on every
/// attempt: the server decides a set sent again after its idempotency window from that time, never
/// applying it twice (docs/gateway.md, "Idempotency").
@Suite("Idempotency-Key-Created")
@MainActor
struct IdempotencyCreatedTests {
    @Test("a set whose request failed is sent again with the same key and the same creation time")
    func sameCreationTimeOnEveryAttempt() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer()
            let before = Date()
            ada.transport.failRequests(1)
            ada.scope.modify { ada.canvas.shapes[0].x = 7 }
            try await Poll.until("ada's change is confirmed (ada: \(ada.summary))") { ada.sync.pendingCount == 0 }

            let posts = ada.transport.exchanges("POST /v1/scopes/\(live.scopeName)/changesets")
            #expect(posts.count >= 2, "the failed request made the set go again: \(posts.map(\.headers))")
            let keys = Set(posts.compactMap { $0.headers["Idempotency-Key"] })
            let created = Set(posts.compactMap { $0.headers["Idempotency-Key-Created"] })
            #expect(keys.count == 1 && created.count == 1, "keys \(keys), times \(created)")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let made = try #require(created.first.flatMap(formatter.date(from:)), "RFC 3339: \(created)")
            #expect(abs(made.timeIntervalSince(before)) < 60)
            #expect(try CanvasSnapshot(try await live.serverState()).shapes[0].x == 7)
            #expect(ada.rejections.isEmpty)
        }
    }
}
