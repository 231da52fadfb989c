import CNGHTTP2
import HTTP2
import HTTPCompression
import HTTPTypes
import Testing

@testable import HTTP2

@Suite struct HTTP2ProtocolTests {
    @Test func badPreface_Throws() throws {
        let server = try HTTP2ServerSession()
        #expect(throws: HTTP2SessionError.self) {
            try server.receive(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        }
    }

    @Test func protocolViolation_SendsGoAwayAndFinishes() throws {
        let server = try HTTP2ServerSession()
        // Preface, empty SETTINGS, then a DATA frame on stream 0, which RFC 9113 §6.1 forbids.
        var bytes = HTTP2Preface.bytes
        bytes += [0, 0, 0, 4, 0, 0, 0, 0, 0]
        bytes += [0, 0, 1, 0, 0, 0, 0, 0, 0, 0x41]
        do { try server.receive(bytes) } catch {}
        let sent = frames(in: try server.drainOutput())
        let goAway = try #require(sent.first { $0.type == UInt8(NGHTTP2_GOAWAY.rawValue) })
        #expect(goAway.payload[7] == UInt8(HTTP2ErrorCode.protocolError.rawValue))
        #expect(server.isFinished)
    }

    @Test func serverPreface_AdvertisesTheLimits() throws {
        var configuration = HTTP2Configuration()
        configuration.maxConcurrentStreams = 42
        let server = try HTTP2ServerSession(configuration: configuration)
        let settings = try #require(frames(in: try server.drainOutput()).first)
        #expect(settings.type == UInt8(NGHTTP2_SETTINGS.rawValue))
        var values: [UInt16: UInt32] = [:]
        for offset in stride(from: 0, to: settings.payload.count, by: 6) {
            let id = UInt16(settings.payload[offset]) << 8 | UInt16(settings.payload[offset + 1])
            values[id] = settings.payload[(offset + 2)...(offset + 5)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        #expect(values[0x3] == 42)  // MAX_CONCURRENT_STREAMS
        #expect(values[0x2] == 0)  // ENABLE_PUSH
        #expect(values[0x6] == configuration.maxHeaderListSize)
    }

    @Test(arguments: [
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HTTP2Preface.Match.http2),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\u{4}", .http2),
        ("PRI * HTTP", .incomplete),
        ("", .incomplete),
        ("GET / HTTP/1.1\r\n", .notHTTP2),
        ("PRI * HTTP/1.1", .notHTTP2),
    ])
    func preface_IsRecognised(input: String, expected: HTTP2Preface.Match) {
        #expect(HTTP2Preface.match(Array(input.utf8)) == expected)
    }

    @Test func base64URL_DecodesSettingsPayloads() {
        #expect(Base64URL.decode("AAMAAABkAAQAAP__") == [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 255, 255])
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("AAMAAABk=") == [0, 3, 0, 0, 0, 100])
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.decode("AA!A") == nil)
    }

    @Test func upgrade_MakesTheRequestStreamOne() throws {
        // The client's SETTINGS payload, as curl sends it in HTTP2-Settings.
        let entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100)
        ]
        var payload = [UInt8](repeating: 0, count: 64)
        let length = nghttp2_pack_settings_payload(&payload, payload.count, entries, entries.count)
        payload = Array(payload.prefix(length))
        let header = base64URL(payload)

        let server = try HTTP2ServerSession()
        let request = HTTPRequest(method: .get, scheme: "http", authority: "example.test", path: "/upgraded")
        try server.upgrade(settingsHeader: header, request: request, body: [])
        let events = server.takeEvents()
        #expect(events.requests.map(\.stream) == [HTTP2StreamID(1)])
        #expect(events.requests.first?.head.path == "/upgraded")

        let client = try H2TestClient(sendSettings: false)
        let status = payload.withUnsafeBufferPointer {
            nghttp2_session_upgrade2(client.session, $0.baseAddress, $0.count, 0, nil)
        }
        #expect(status == 0)
        server.respond(to: HTTP2StreamID(1), with: HTTPResponse(status: .ok), body: Array("via h2c".utf8))
        let closing = try pump(client, server)
        #expect(client.streams[1]?.status == 200)
        #expect(client.streams[1]?.body == Array("via h2c".utf8))
        #expect(closing.closedStreams[HTTP2StreamID(1)] == .noError)
        // Later requests use the same connection on stream 3.
        let next = client.request("GET", "/next")
        #expect(next == 3)
        #expect(try pump(client, server).requests.map(\.stream) == [HTTP2StreamID(3)])
    }

    @Test func upgrade_RejectsABadSettingsHeader() throws {
        let server = try HTTP2ServerSession()
        let request = HTTPRequest(method: .get, scheme: "http", authority: "x", path: "/")
        #expect(throws: HTTP2SessionError.self) {
            try server.upgrade(settingsHeader: "!!!", request: request, body: [])
        }
        // 5 bytes is not a whole number of 6-byte settings.
        #expect(throws: HTTP2SessionError.self) {
            try server.upgrade(settingsHeader: "AAMAAAA", request: request, body: [])
        }
    }

    @Test func gzipSSE_EachDataFrameDecodesOnArrival() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("GET", "/events", fields: [("accept-encoding", "gzip")])
        let request = try #require(try pump(client, server).requests.first)
        let coding = try #require(
            CompressionPolicy().coding(
                acceptEncoding: request.head.headerFields[.acceptEncoding], contentType: "text/event-stream",
                bodySize: nil))
        let gzip = try CompressionStream(coding: coding)
        server.startStream(
            request.stream,
            with: HTTPResponse(
                status: .ok, headerFields: [.contentType: "text/event-stream", .contentEncoding: "gzip"]))
        let inflater = try Inflater()
        for event in CompressionStreamTests.events(count: 30) {
            server.write(try gzip.write(event), to: request.stream)
            try pump(client, server)
            #expect(try inflater.inflate(client.streams[stream]!.chunks.last!) == event)
        }
        server.write(try gzip.finish(), to: request.stream)
        server.endStream(request.stream)
        try pump(client, server)
        #expect(try inflater.inflate(client.streams[stream]!.chunks.last!).isEmpty)
        #expect(inflater.isFinished)
        #expect(client.streams[stream]?.field("content-encoding") == "gzip")
    }

    @Test func drainOutput_StopsNearTheLimit() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient(settings: [(Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), 1 << 20)])
        client.request("GET", "/big")
        let request = try #require(try pump(client, server).requests.first)
        server.respond(to: request.stream, with: HTTPResponse(status: .ok), body: [UInt8](repeating: 9, count: 60_000))
        var buffer: [UInt8] = []
        let first = try server.drainOutput(into: &buffer, limit: 1000)
        #expect(first >= 1000)
        #expect(first < 60_000)
        #expect(server.wantsWrite)
    }

    private func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var text = ""
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                text.append(alphabet[Int(accumulator >> UInt32(bits) & 63)])
            }
        }
        if bits > 0 { text.append(alphabet[Int(accumulator << UInt32(6 - bits) & 63)]) }
        return text
    }
}
