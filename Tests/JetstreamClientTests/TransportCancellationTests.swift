import Foundation
import JetstreamClient
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cancelling a request of ``URLSessionTransport`` while its answer arrives. On Linux,
/// FoundationNetworking's own async `data(for:)` cancels its URLSessionTask inside the Swift task's
/// cancellation, waiting for the session's queue while the task is locked; the session's queue,
/// handing the same task its answer, waits for that lock: both threads stop for good. A sync
/// stopped with a request in flight hung that way.
@Suite("URLSessionTransport cancellation")
@MainActor
struct TransportCancellationTests {
    @Test("requests cancelled at every moment of their answer all end, cancelled or answered")
    func cancelledRequestsAlwaysEnd() async throws {
        let gateway = try await GatewayProcess()
        defer { gateway.shutdown() }
        let transport = URLSessionTransport()
        let request = URLRequest(url: gateway.url.appending(path: "/healthz"))
        let ended = Counter()
        let answered = Counter()
        let total = 400
        for round in 0..<total {
            let task = Task.detached {
                if (try? await transport.data(for: request)) != nil { answered.add() }
                ended.add()
            }
            // Cancel at spread moments: before the request goes out, while it is in flight, as
            // its answer is delivered.
            for _ in 0..<(round % 40) { await Task.yield() }
            if round % 3 != 0 { try await Task.sleep(for: .microseconds(50 * (round % 9))) }
            task.cancel()
            if round % 20 == 19 {
                try await Poll.until("\(round + 1) requests end (\(ended.value) did)", within: .seconds(30)) {
                    ended.value == round + 1
                }
            }
        }
        #expect(ended.value == total)
        // Some were answered before their cancel took effect: the race was run, not avoided.
        #expect(answered.value > 0)
        // The transport still works after all those cancels.
        let (_, response) = try await transport.data(for: request)
        #expect(response.statusCode == 200)
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }
}
