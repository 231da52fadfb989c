import CNGHTTP2
import HTTP2
import HTTPTypes
import Synchronization
import Testing

/// What a session lets its owner bound: responses stuck at a zero window, shared bodies queued
/// without a copy, bodies refused from their heads, and the server-wide body budget.
@Suite struct HTTP2SessionBoundsTests {
    /// A shared buffer that counts how many are alive (freed once no stream holds it).
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        var current: Int { value.load(ordering: .relaxed) }
        func add(_ count: Int) { value.add(count, ordering: .relaxed) }
    }

    final class CountedBody: HTTP2SharedBody, @unchecked Sendable {
        let bytes: [UInt8]
        let alive: Counter
        init(_ bytes: [UInt8], alive: Counter) {
            self.bytes = bytes
            self.alive = alive
            alive.add(1)
        }
        deinit { alive.add(-1) }
        var count: Int { bytes.count }
        func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            try bytes.withUnsafeBytes(body)
        }
    }

    final class Budget: HTTP2BodyBudget, @unchecked Sendable {
        let limit: Int
        let held = Atomic<Int>(0)
        init(limit: Int) { self.limit = limit }
        func reserveBodyBytes(_ count: Int) -> Bool {
            guard held.add(count, ordering: .relaxed).newValue > limit else { return true }
            held.subtract(count, ordering: .relaxed)
            return false
        }
        func releaseBodyBytes(_ count: Int) { held.subtract(count, ordering: .relaxed) }
    }

    /// A client that never re-opens its window: 4 KiB per stream, then nothing.
    private func stingyClient() throws -> H2TestClient {
        try H2TestClient(
            settings: [(Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), 4096)],
            configure: { nghttp2_option_set_no_auto_window_update($0, 1) })
    }

    @Test func aResponseAtAZeroWindow_IsListedUntilItsStreamIsReset() throws {
        let server = try HTTP2ServerSession()
        let client = try stingyClient()
        let stream = client.request("GET", "/large")
        let request = try #require(try pump(client, server).requests.first)
        server.respond(to: request.stream, with: HTTPResponse(status: .ok), body: Array(repeating: 7, count: 100_000))
        try pump(client, server)
        #expect(server.queuedResponses == [.init(stream: request.stream, sentBytes: 4096, queuedBytes: 95_904)])
        #expect(server.queuedResponseBytes == 95_904)

        server.reset(request.stream, errorCode: .cancel)
        try pump(client, server)
        #expect(server.queuedResponses.isEmpty)
        #expect(server.queuedResponseBytes == 0)
        #expect(client.streams[stream]?.resetWith == HTTP2ErrorCode.cancel.rawValue)
    }

    @Test func progressShowsAsSentBytes_AndADrainedStreamLeavesTheList() throws {
        let server = try HTTP2ServerSession()
        let client = try stingyClient()
        let stream = client.request("GET", "/large")
        let request = try #require(try pump(client, server).requests.first)
        server.respond(to: request.stream, with: HTTPResponse(status: .ok), body: Array(repeating: 1, count: 10_000))
        try pump(client, server)
        #expect(server.queuedResponses.first?.sentBytes == 4096)
        client.consume(4096, on: stream)
        try pump(client, server)
        #expect(server.queuedResponses.first?.sentBytes == 8192)
        client.consume(4096, on: stream)
        try pump(client, server)
        #expect(server.queuedResponses.isEmpty)
        #expect(client.streams[stream]!.body == Array(repeating: 1, count: 10_000))
    }

    @Test func aSharedBody_IsSentWhole_AndReleasedWhenItsStreamCloses() throws {
        let alive = Counter()
        let server = try HTTP2ServerSession()
        let client = try stingyClient()
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let first = client.request("GET", "/state")
        let second = client.request("GET", "/state")
        let requests = try pump(client, server).requests
        #expect(requests.count == 2)
        do {
            let body = CountedBody(bytes, alive: alive)
            for request in requests {
                server.respond(to: request.stream, with: HTTPResponse(status: .ok), sharedBody: body)
            }
        }
        try pump(client, server)
        // Both streams hold the one buffer, stalled at the window.
        #expect(alive.current == 1)
        #expect(server.queuedResponseBytes == 2 * (50_000 - 4096))
        // The first client reads everything; the second stream is reset.
        for _ in 0..<20 where client.streams[first]!.body.count < bytes.count {
            client.consume(client.streams[first]!.body.count, on: first)
            client.streams[first]!.chunks = [client.streams[first]!.body]
            try pump(client, server)
        }
        #expect(client.streams[first]!.body == bytes)
        #expect(client.streams[first]!.field("content-length") == "50000")
        #expect(alive.current == 1)
        server.reset(HTTP2StreamID(second), errorCode: .cancel)
        try pump(client, server)
        #expect(alive.current == 0)
        #expect(server.queuedResponseBytes == 0)
    }

    @Test func aBodyRefusedFromItsHead_IsHandedOutAtOnce_AndItsDataIsNeverBuffered() throws {
        let server = try HTTP2ServerSession()
        var asked: [String] = []
        server.admitsBody = { head in
            asked.append(head.path ?? "")
            return head.path != "/refused"
        }
        let client = try H2TestClient()
        let refused = client.request("POST", "/refused", body: Array(repeating: 1, count: 30_000))
        client.request("POST", "/wanted", body: Array(repeating: 2, count: 30_000))
        client.request("GET", "/plain")
        let requests = try pump(client, server).requests
        #expect(asked == ["/refused", "/wanted"])  // a request without a body is not asked about
        let byPath = Dictionary(uniqueKeysWithValues: requests.map { ($0.head.path ?? "", $0.body.count) })
        #expect(byPath == ["/refused": 0, "/wanted": 30_000, "/plain": 0])
        // Answering the refused request ends its stream and tells the client to stop sending.
        server.respond(
            to: try #require(requests.first { $0.head.path == "/refused" }).stream,
            with: HTTPResponse(status: .unauthorized))
        try pump(client, server)
        #expect(client.streams[refused]?.status == 401)
    }

    @Test func theServerWideBudget_RefusesWithServiceUnavailable_AndGetsEveryByteBack() throws {
        let budget = Budget(limit: 40_000)
        do {
            let server = try HTTP2ServerSession()
            server.bodyBudget = budget
            let client = try H2TestClient()
            let first = client.request("POST", "/a", body: Array(repeating: 1, count: 30_000))
            let second = client.request("POST", "/b", body: Array(repeating: 2, count: 30_000))
            let requests = try pump(client, server).requests
            // Both bodies arrive interleaved; the one whose bytes do not fit is answered 503.
            #expect(requests.count == 1)
            let statuses = [first, second].compactMap { client.streams[$0]?.status }
            #expect(statuses == [503])
            // Bytes of a request handed out are released with it.
            #expect(budget.held.load(ordering: .relaxed) == 0)
            // A third body, still arriving when the connection goes away, is released with it.
            client.request("POST", "/c", body: Array(repeating: 3, count: 30_000))
            let output = try client.output()
            try server.receive(Array(output.prefix(output.count - 1000)))
            #expect(budget.held.load(ordering: .relaxed) > 0)
        }
        #expect(budget.held.load(ordering: .relaxed) == 0)
    }
}
