import HTTPServer
import HTTPTypes
import Testing

/// The server against curl: keep-alive reuse, chunked uploads, HTTP/1.0, HEAD, Expect and SSE.
@Suite struct CurlLiveTests {
    static func router() -> Router {
        var router = Router()
        router.get("/health") { _, _ in .text("ok") }
        router.on(nil, "/echo") { request, _ in
            .text("\(request.method.rawValue) \(request.version) \(String(decoding: request.body, as: UTF8.self))")
        }
        router.get("/events") { _, context in
            let stream = context.openEventStream()
            Task {
                for index in 1...3 { stream.send(SSEEvent(id: String(index), data: "event \(index)")) }
                stream.close()
            }
            return .streamOpened
        }
        return router
    }

    @Test func getReusesTheKeepAliveConnection() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let url = "http://127.0.0.1:\(port)/health"
            let result = try await Curl.run(["--verbose", url, url])
            #expect(result.exitCode == 0)
            #expect(result.output == "okok")
            #expect(result.errors.contains("Re-using existing connection"))
        }
    }

    @Test func uploadsChunkedWithExpectContinue() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let result = try await Curl.run([
                "-H", "Transfer-Encoding: chunked", "-H", "Expect: 100-continue", "--data-binary", "hello chunks",
                "http://127.0.0.1:\(port)/echo",
            ])
            #expect(result.exitCode == 0)
            #expect(result.output == "POST HTTP/1.1 hello chunks")
        }
    }

    @Test func servesHTTP10AndHead() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let old = try await Curl.run(["--http1.0", "http://127.0.0.1:\(port)/echo"])
            #expect(old.output == "GET HTTP/1.0 ")
            let head = try await Curl.run(["--head", "http://127.0.0.1:\(port)/health"])
            #expect(head.exitCode == 0)
            #expect(head.output.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(head.output.contains("Content-Length: 2\r\n"))
        }
    }

    @Test func streamsServerSentEvents() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let result = try await Curl.run(["--no-buffer", "http://127.0.0.1:\(port)/events"])
            #expect(result.exitCode == 0)
            // A heartbeat comes first when the handler's task starts late (a loaded machine).
            let events = result.output.replacing(": keep-alive\n\n", with: "")
            #expect(events == "id: 1\ndata: event 1\n\nid: 2\ndata: event 2\n\nid: 3\ndata: event 3\n\n")
        }
    }
}
