import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Testing

/// `Backoff` alone: exponential ceilings, capped, with full jitter.
@Suite("Backoff")
struct BackoffTests {
    @Test("the ceiling doubles from the initial delay and stops at the maximum")
    func ceilingDoublesAndCaps() {
        let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(30))
        let ceilings = (0...8).map { backoff.ceiling(attempt: $0) }
        #expect(
            ceilings == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30),
                .seconds(30), .seconds(30),
            ])
        #expect(backoff.ceiling(attempt: 1000) == .seconds(30), "no overflow for large attempts")
        #expect(backoff.ceiling(attempt: -3) == .milliseconds(500))
        #expect(Backoff() == backoff, "the defaults are docs/sync-protocol.md's (R5): 0.5 s, capped at 30 s")
    }

    @Test("a delay is the ceiling scaled by the random draw: in [0, ceiling)")
    func delayIsWithinTheCeiling() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(8))
        #expect(backoff.delay(attempt: 2, random: 0) == .zero)
        #expect(backoff.delay(attempt: 2, random: 0.5) == .seconds(2))
        #expect(backoff.delay(attempt: 2, random: 0.25) == .seconds(1))
        #expect(backoff.delay(attempt: 9, random: 0.5) == .seconds(4), "capped before the jitter")
        #expect(backoff.delay(attempt: 2, random: 0.999_999) < .seconds(4))
    }

    @Test("drawn delays spread over the whole range (full jitter), never reaching the ceiling")
    func delaysSpread() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        for attempt in 0..<6 {
            let ceiling = backoff.ceiling(attempt: attempt)
            let delays = (0..<2000).map { _ in backoff.delay(attempt: attempt) }
            #expect(delays.allSatisfy { $0 >= .zero && $0 < ceiling })
            #expect(delays.min()! < ceiling / 10 && delays.max()! > ceiling * 9 / 10, "attempt \(attempt)")
            #expect(Set(delays).count > 1900, "jittered, not a few fixed values")
        }
    }
}

/// Reconnection against the real gateway: killed and restarted, and `event: closing` (a drain on
/// SIGTERM, a stream rotation) which reconnects at once.
@Suite("Reconnection")
@MainActor
struct ReconnectionTests {
    static func attempts(_ statuses: [ScopeSync.Status]) -> [Int] {
        statuses.compactMap { status in
            if case .reconnecting(let attempt) = status { return attempt }
            return nil
        }
    }

    @Test("with the server killed the attempts grow; after a restart the sync is live and converges")
    func killedServerBacksOffThenRecovers() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer()
            let bob = try await live.peer()
            try await live.waitUntilConverged([ada, bob])

            live.gateway.kill()
            try await Poll.until("ada tries a fourth time (\(ada.statuses))") {
                Self.attempts(ada.statuses).contains(4)
            }
            let attempts = Self.attempts(ada.statuses)
            #expect(attempts == Array(1...attempts.count), "one status per attempt, counting up: \(attempts)")
            // Local changes while the server is gone stay visible and pending.
            ada.scope.modify { ada.canvas.shapes[0].label = "written while down" }
            let extra = Shape()
            bob.scope.modify { bob.canvas.shapes.append(extra) }
            #expect(ada.sync.pendingCount == 1 && bob.sync.pendingCount == 1)

            try await live.gateway.restart()
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.statuses.last == .live)
            #expect(ada.canvas.shapes.map(\.label) == ["written while down", ""])
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty)
        }
    }

    @Test("event: closing (stream rotation) reconnects at once, never through the backoff")
    func closingReconnectsAtOnce() async throws {
        // A backoff would be seconds long: its attempts (≥ 1) never show.
        try await LiveHarness.run(["--stream-max-age", "2"]) { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer(backoff: Backoff(initial: .seconds(5), maximum: .seconds(5)))
            let bob = try await live.peer()
            // The transport sees `closing` before the sync does: wait for the third connection.
            try await Poll.until("ada's stream is rotated twice (\(ada.statuses))", within: .seconds(15)) {
                ada.transport.eventCount("closing") >= 2 && ada.transport.streamRequests.count >= 3
                    && ada.sync.status == .live
            }
            #expect(Self.attempts(ada.statuses).allSatisfy { $0 == 0 }, "no backoff: \(ada.statuses)")
            bob.scope.modify { bob.canvas.shapes[0].x = 3 }
            try await live.waitUntilConverged([ada, bob])
        }
    }

    @Test("SIGTERM: the drain's event: closing makes the client reconnect at once; it is live after the restart")
    func drainReconnectsAtOnce() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer(backoff: Backoff(initial: .seconds(5), maximum: .seconds(5)))
            try await live.waitUntilConverged([ada])
            let streamsBefore = ada.transport.streamRequests.count
            let statusesBefore = ada.statuses.count

            try await live.gateway.terminate()
            try await Poll.until("ada tries again (\(ada.statuses))") {
                ada.transport.streamRequests.count > streamsBefore
            }
            #expect(ada.transport.eventCount("closing") == 1)
            // Attempt 0 is the reconnection at once; a failure would have gone through the backoff
            // (attempt 1, after up to 5 s). The status says which path ran, whatever the machine's speed.
            #expect(
                ada.statuses.dropFirst(statusesBefore).first == .reconnecting(attempt: 0),
                "closing, not a failure: \(ada.statuses)")

            try await live.gateway.restart()
            ada.scope.modify { ada.canvas.shapes[0].label = "after the restart" }
            try await live.waitUntilConverged([ada], within: .seconds(30))
        }
    }

    @Test("a draining server that closes every new stream at once is not hammered: the client backs off")
    func drainingServerIsNotHammered() async throws {
        // The drain is far longer than the test waits in it, so a slow machine cannot end it
        // before the client has met it twice; the test then kills the server instead.
        try await LiveHarness.run(["--drain-delay", "30", "--grace-period", "1"]) { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer(backoff: Backoff(initial: .milliseconds(500), maximum: .milliseconds(500)))
            try await live.waitUntilConverged([ada])
            let before = ada.transport.streamRequests.count
            let statusesBefore = ada.statuses.count
            // From now on every stream opened gets `closing` at once.
            live.gateway.beginTermination()
            try await Poll.until("the backoff takes over (\(ada.statuses.suffix(5)))", within: .seconds(20)) {
                Self.attempts(ada.statuses).contains { $0 >= 1 }
            }
            // The first closing reconnects at once; that stream meets the drain and ends at once
            // too, and then the client backs off, starting at attempt 1. A connection that took
            // more than a second to meet the drain (a loaded machine) reconnects at once again
            // first, as the spin guard's rule says (docs/sync-protocol.md, R4).
            #expect(ada.transport.streamRequests.count - before >= 1)
            let attempts = Self.attempts(Array(ada.statuses.dropFirst(statusesBefore)))
            #expect(
                attempts.first == 0 && attempts.first(where: { $0 != 0 }) == 1,
                "at once, then the backoff from attempt 1: \(ada.statuses.suffix(5))")
            let backingOff = ada.transport.streamRequests.count
            try await Task.sleep(for: .seconds(2))
            let during = ada.transport.streamRequests.count - backingOff
            #expect(during <= 25, "\(during) stream requests in 2 s of drain: reconnecting at once in a loop")

            try await live.gateway.restart()
            try await live.waitUntilConverged([ada])
        }
    }
}
