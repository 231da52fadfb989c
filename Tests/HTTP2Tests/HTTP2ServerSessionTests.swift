import HTTP2
import HTTPTypes
import Testing

@Suite struct HTTP2ServerSessionTests {
    @Test func get_DeliversRequestAndResponse() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("GET", "/hello?x=1", fields: [("accept", "text/plain"), ("x-trace", "abc")])
        let requests = try pump(client, server).requests
        try #require(requests.count == 1)
        let request = requests[0]
        #expect(request.stream == HTTP2StreamID(stream))
        #expect(request.head.method == .get)
        #expect(request.head.path == "/hello?x=1")
        #expect(request.head.scheme == "http")
        #expect(request.head.authority == "example.test")
        #expect(request.head.headerFields[.accept] == "text/plain")
        #expect(request.head.headerFields[HTTPField.Name("x-trace")!] == "abc")
        #expect(request.body.isEmpty)

        let response = HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain", .connection: "keep-alive"])
        #expect(server.respond(to: request.stream, with: response, body: Array("hello".utf8)))
        let closing = try pump(client, server)
        let seen = try #require(client.streams[stream])
        #expect(seen.status == 200)
        #expect(seen.body == Array("hello".utf8))
        #expect(seen.field("content-length") == "5")
        #expect(seen.field("content-type") == "text/plain")
        // Connection-specific fields are dropped: nghttp2's client would reset the stream otherwise.
        #expect(seen.field("connection") == nil)
        #expect(seen.closedWith == 0)
        #expect(closing.closedStreams == [request.stream: .noError])
        #expect(server.openStreams.isEmpty)
    }

    @Test func post_DeliversBodyLargerThanTheWindow() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        client.request("POST", "/upload", fields: [("content-type", "application/octet-stream")], body: body)
        let requests = try pump(client, server).requests
        try #require(requests.count == 1)
        #expect(requests[0].head.method == .post)
        #expect(requests[0].body == body)
    }

    @Test func oversizedBody_Gets413AndNoRequest() throws {
        var configuration = HTTP2Configuration()
        configuration.maxRequestBodySize = 1000
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        let stream = client.request("POST", "/upload", body: [UInt8](repeating: 7, count: 50_000))
        let events = try pump(client, server)
        #expect(events.requests.isEmpty)
        let seen = try #require(client.streams[stream])
        #expect(seen.status == 413)
        #expect(String(decoding: seen.body, as: UTF8.self).contains("exceeds 1000 bytes"))
        #expect(seen.closedWith != nil)
        #expect(server.openStreams.isEmpty)
    }

    @Test func declaredContentLengthOverLimit_Gets413BeforeTheBody() throws {
        var configuration = HTTP2Configuration()
        configuration.maxRequestBodySize = 1000
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        let stream = client.request(
            "POST", "/upload", fields: [("content-length", "5000")], body: [UInt8](repeating: 1, count: 5000))
        #expect(try pump(client, server).requests.isEmpty)
        #expect(client.streams[stream]?.status == 413)
    }

    @Test func oversizedHeaders_Get431() throws {
        var configuration = HTTP2Configuration()
        configuration.maxHeaderListSize = 2000
        let server = try HTTP2ServerSession(configuration: configuration)
        let client = try H2TestClient()
        let stream = client.request("GET", "/", fields: [("x-big", String(repeating: "a", count: 3000))])
        let small = client.request("GET", "/small")
        let events = try pump(client, server)
        #expect(events.requests.map(\.stream) == [HTTP2StreamID(small)])
        #expect(client.streams[stream]?.status == 431)
    }

    @Test func head_SendsLengthButNoBody() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("HEAD", "/doc")
        let request = try #require(try pump(client, server).requests.first)
        server.respond(to: request.stream, with: HTTPResponse(status: .ok), body: [UInt8](repeating: 65, count: 1234))
        try pump(client, server)
        #expect(client.streams[stream]?.status == 200)
        #expect(client.streams[stream]?.field("content-length") == "1234")
        #expect(client.streams[stream]?.body.isEmpty == true)
    }

    @Test func manyStreamedResponses_ShareOneConnection() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let ids = (0..<60).map { client.request("GET", "/sse/\($0)") }
        let requests = try pump(client, server).requests
        #expect(requests.count == 60)
        let sse = HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"])
        for request in requests { #expect(server.startStream(request.stream, with: sse)) }
        try pump(client, server)
        for round in 0..<20 {
            for request in requests {
                let event = Array("id: \(round)\ndata: \(request.head.path!)\n\n".utf8)
                #expect(server.write(event, to: request.stream) == .accepted)
            }
            try pump(client, server)
        }
        for request in requests { #expect(server.endStream(request.stream)) }
        let closing = try pump(client, server)
        #expect(closing.closedStreams.count == 60)
        for (index, id) in ids.enumerated() {
            let expected = (0..<20).map { "id: \($0)\ndata: /sse/\(index)\n\n" }.joined()
            #expect(client.streams[id]?.status == 200)
            #expect(String(decoding: client.streams[id]!.body, as: UTF8.self) == expected)
            #expect(client.streams[id]?.closedWith == 0)
        }
    }

    @Test func idleStream_SendsEventsAsTheyAreWritten() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("GET", "/events")
        let request = try #require(try pump(client, server).requests.first)
        server.startStream(request.stream, with: HTTPResponse(status: .ok))
        try pump(client, server)
        #expect(client.streams[stream]?.status == 200)
        #expect(client.streams[stream]?.chunks.isEmpty == true)
        for index in 0..<3 {
            server.write(Array("data: \(index)\n\n".utf8), to: request.stream)
            try pump(client, server)
            // Each event arrives as its own DATA frame, while the stream stays open.
            #expect(client.streams[stream]?.chunks.last == Array("data: \(index)\n\n".utf8))
            #expect(client.streams[stream]?.closedWith == nil)
        }
    }

    @Test func writesAfterEndOrOnUnknownStreams_AreRefused() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        client.request("GET", "/")
        let request = try #require(try pump(client, server).requests.first)
        #expect(server.write([1], to: request.stream) == .streamNotWritable)  // not started
        #expect(server.startStream(request.stream, with: HTTPResponse(status: .ok)))
        #expect(!server.startStream(request.stream, with: HTTPResponse(status: .ok)))
        #expect(server.endStream(request.stream))
        #expect(server.write([1], to: request.stream) == .streamNotWritable)
        #expect(!server.endStream(request.stream))
        #expect(server.write([1], to: HTTP2StreamID(99)) == .streamNotWritable)
        #expect(!server.respond(to: HTTP2StreamID(99), with: HTTPResponse(status: .ok)))
    }

    @Test func clientReset_ClosesTheStreamForTheCaller() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("GET", "/events")
        let request = try #require(try pump(client, server).requests.first)
        server.startStream(request.stream, with: HTTPResponse(status: .ok))
        try pump(client, server)
        client.reset(stream, code: HTTP2ErrorCode.cancel.rawValue)
        let events = try pump(client, server)
        #expect(events.closedStreams == [request.stream: .cancel])
        #expect(server.write([1], to: request.stream) == .streamNotWritable)
        #expect(server.openStreams.isEmpty)
    }

    @Test func unsendableResponseHead_ResetsTheStream() throws {
        let server = try HTTP2ServerSession()
        let client = try H2TestClient()
        let stream = client.request("GET", "/")
        let request = try #require(try pump(client, server).requests.first)
        var response = HTTPResponse(status: .ok)
        for index in 0..<20 {
            response.headerFields.append(
                HTTPField(name: HTTPField.Name("x-big-\(index)")!, value: String(repeating: "v", count: 8000)))
        }
        server.respond(to: request.stream, with: response, body: [])
        let events = try pump(client, server)
        #expect(client.streams[stream]?.resetWith == HTTP2ErrorCode.internalError.rawValue)
        #expect(events.closedStreams[request.stream] != nil)
        #expect(server.openStreams.isEmpty)
    }
}
