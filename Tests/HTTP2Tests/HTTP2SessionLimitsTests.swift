import CNGHTTP2
import HTTP2
import HTTPTypes
import Testing

@Suite struct HTTP2SessionLimitsTests {
    @Test func slowClient_StallsAtItsWindowAndOverflowsAtTheCap() throws {
        var configuration = HTTP2Configuration()
        configuration.maxPendingBytesPerStream = 16 * 1024
        let server = try HTTP2ServerSession(configuration: configuration)
        // The client never re-opens its window on its own: 4 KiB per stream, then nothing.
        let client = try H2TestClient(
            settings: [(Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), 4096)],
            configure: { nghttp2_option_set_no_auto_window_update($0, 1) })
        let stream = client.request("GET", "/events")
        let request = try #require(try pump(client, server).requests.first)
        server.startStream(request.stream, with: HTTPResponse(status: .ok))
        let event = [UInt8](repeating: UInt8(ascii: "x"), count: 1000)
        var accepted = 0
        var result = HTTP2WriteResult.accepted
        while result == .accepted && accepted < 1000 {
            result = server.write(event, to: request.stream)
            if result == .accepted { accepted += 1 }
            try pump(client, server)
        }
        #expect(result == .overflow)
        let delivered = client.streams[stream]!.body.count
        #expect(delivered == 4096)
        #expect(server.pendingBytes(on: request.stream) <= configuration.maxPendingBytesPerStream)
        #expect(server.pendingBytes(on: request.stream) == accepted * 1000 - delivered)

        // The client reads: WINDOW_UPDATEs release the queue, and writes are accepted again.
        var rounds = 0
        while server.pendingBytes(on: request.stream) > 0 && rounds < 100 {
            client.consume(client.streams[stream]!.body.count, on: stream)
            client.streams[stream]!.chunks = [client.streams[stream]!.body]
            try pump(client, server)
            rounds += 1
        }
        #expect(server.pendingBytes(on: request.stream) == 0)
        #expect(client.streams[stream]!.body.count == accepted * 1000)
        #expect(server.write(event, to: request.stream) == .accepted)
    }

    @Test func concurrentStreamsBeyondTheLimit_AreRefused() throws {
        var configuration = HTTP2Configuration()
        configuration.maxConcurrentStreams = 5
        let server = try HTTP2ServerSession(configuration: configuration)
        // This client ignores the server's limit (sends before SETTINGS arrive), like an attacker.
        let client = try H2TestClient(configure: { nghttp2_option_set_peer_max_concurrent_streams($0, 1000) })
        let ids = (0..<10).map { client.request("GET", "/slow/\($0)") }
        let requests = try pump(client, server).requests
        #expect(requests.count == 5)
        let refused = ids.filter { client.streams[$0]?.resetWith == HTTP2ErrorCode.refusedStream.rawValue }
        #expect(refused.count == 5)
    }

    @Test func politeClient_QueuesBeyondTheAdvertisedLimit() throws {
        var configuration = HTTP2Configuration()
        configuration.maxConcurrentStreams = 3
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        try pump(client, server)  // SETTINGS exchanged
        for index in 0..<7 { client.request("GET", "/item/\(index)") }
        var served = 0
        for _ in 0..<10 where served < 7 {
            let requests = try pump(client, server).requests
            #expect(requests.count <= 3)
            for request in requests {
                server.respond(to: request.stream, with: HTTPResponse(status: .noContent))
                served += 1
            }
        }
        #expect(served == 7)
    }

    @Test func rapidReset_EndsTheConnection() throws {
        var configuration = HTTP2Configuration()
        configuration.resetBurst = 10
        configuration.resetRatePerSecond = 1
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        try pump(client, server)
        // Open and immediately cancel streams, as in CVE-2023-44487, all in one burst.
        var bytes: [UInt8] = []
        for index in 0..<50 {
            let stream = client.request("GET", "/r/\(index)")
            bytes += try client.output()
            client.reset(stream)
            bytes += try client.output()
        }
        do {
            try server.receive(bytes)
        } catch {
            // nghttp2 may also report the flood as an error; either way it must end the connection.
        }
        let output = try server.drainOutput()
        let goAway = try #require(frames(in: output).first { $0.type == UInt8(NGHTTP2_GOAWAY.rawValue) })
        let code = goAway.payload[4...7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(code != HTTP2ErrorCode.noError.rawValue)
        #expect(server.isFinished)
    }

    @Test func resetsWithinTheBudget_AreFine() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        try pump(client, server)
        for index in 0..<50 {
            let stream = client.request("GET", "/r/\(index)")
            _ = try pump(client, server)
            client.reset(stream)
        }
        try pump(client, server)
        #expect(client.goAway == nil)
        #expect(!server.isFinished)
    }

    @Test func uploadBudget_RefusesStreamsOverIt() throws {
        var configuration = HTTP2Configuration()
        configuration.maxBufferedRequestBytes = 60_000
        configuration.initialWindowSize = 1 << 20
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        try pump(client, server)
        // Three uploads whose bodies stop after three 16 KiB DATA frames and never end: the first
        // fits the budget (48 KiB), the next two would exceed it and are refused.
        var uploads: [Int32] = []
        for index in 0..<3 {
            uploads.append(client.request("POST", "/u/\(index)", body: [UInt8](repeating: 1, count: 70_000)))
            try server.receive(withoutLastDataFrames(try client.output(), keepingDataBytes: 3 * 16_384))
            #expect(server.takeEvents().requests.isEmpty)
            try client.receive(try server.drainOutput())
        }
        let refused = uploads.filter { client.streams[$0]?.resetWith == HTTP2ErrorCode.refusedStream.rawValue }
        #expect(refused == Array(uploads.dropFirst()))
    }

    /// Keeps every frame but drops DATA beyond `keepingDataBytes` per stream.
    private func withoutLastDataFrames(_ bytes: [UInt8], keepingDataBytes limit: Int) -> [UInt8] {
        var kept: [UInt8] = []
        var perStream: [Int32: Int] = [:]
        var index = 0
        for frame in frames(in: bytes) {
            let end = index + 9 + frame.payload.count
            if frame.type == 0 {
                perStream[frame.stream, default: 0] += frame.payload.count
                if perStream[frame.stream]! <= limit { kept += bytes[index..<end] }
            } else {
                kept += bytes[index..<end]
            }
            index = end
        }
        return kept
    }

    @Test func gracefulShutdown_LetsOpenStreamsFinish() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let first = client.request("GET", "/a")
        let second = client.request("GET", "/b")
        let requests = try pump(client, server).requests
        #expect(requests.count == 2)
        server.beginGracefulShutdown()
        try pump(client, server)
        let goAway = try #require(client.goAway)
        #expect(goAway.lastStreamID == second)
        #expect(goAway.errorCode == 0)
        #expect(!server.isFinished)
        for request in requests {
            server.respond(to: request.stream, with: HTTPResponse(status: .ok), body: Array("done".utf8))
        }
        try pump(client, server)
        #expect(client.streams[first]?.body == Array("done".utf8))
        #expect(client.streams[second]?.body == Array("done".utf8))
        #expect(server.isFinished)
    }

    @Test func clientGoAway_IsReported() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        try pump(client, server)
        nghttp2_submit_goaway(client.session, 0, 0, HTTP2ErrorCode.noError.rawValue, nil, 0)
        let events = try pump(client, server)
        #expect(events.contains(.goAway(lastStreamID: HTTP2StreamID(0), errorCode: .noError)))
    }
}

@Suite struct HTTP2SessionMemoryTests {
    @Test func allocatedBytes_FollowsStreamsAndReturnsWhenTheyClose() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        try pump(client, server)
        let idle = server.allocatedBytes
        #expect(idle > 0)
        for index in 0..<50 { client.request("GET", "/events/\(index)") }
        let requests = try pump(client, server).requests
        for request in requests { server.startStream(request.stream, with: HTTPResponse(status: .ok)) }
        try pump(client, server)
        let busy = server.allocatedBytes
        #expect(busy > idle)
        for request in requests { server.endStream(request.stream) }
        try pump(client, server)
        // Closed streams are kept for a while for priority bookkeeping, so allow some slack.
        #expect(server.allocatedBytes < busy)
    }
}

@Suite struct HTTP2SessionShutdownTests {
    @Test func goAwayWithoutStreams_FinishesAtOnce() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        try pump(client, server)
        #expect(!server.isFinished)
        server.beginGracefulShutdown()
        try pump(client, server)
        #expect(client.goAway?.errorCode == 0)
        #expect(server.isFinished)
    }

    @Test func terminate_SendsGoAwayWithTheCode() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        try pump(client, server)
        server.terminate(errorCode: .enhanceYourCalm)
        try pump(client, server)
        #expect(client.goAway?.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
        #expect(server.isFinished)
    }
}
