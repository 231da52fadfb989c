import HTTPServer
import HTTPTypes
import Testing

/// HTTP/2 on the HTTP/1 port against curl (built with nghttp2): prior knowledge, `Upgrade: h2c`,
/// request bodies, multiplexed streams, SSE and gzip.
@Suite struct HTTP2CurlLiveTests {
    static let json = String(repeating: #"{"id":1,"name":"widget"},"#, count: 100)

    /// The HTTP/1 curl suite's routes plus a compressible JSON body.
    static func router() -> Router {
        var router = CurlLiveTests.router()
        router.get("/json") { _, _ in .json("[\(json.dropLast())]") }
        return router
    }

    @Test func priorKnowledge_ServesHTTP2() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let result = try await Curl.run([
                "--http2-prior-knowledge", "-w", " %{http_version}", "http://127.0.0.1:\(port)/health",
            ])
            #expect(result.exitCode == 0)
            #expect(result.output == "ok 2")
        }
    }

    @Test func upgrade_ServesTheFirstRequestAsStreamOne() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let result = try await Curl.run([
                "--http2", "--verbose", "-w", " %{http_version}", "http://127.0.0.1:\(port)/echo",
            ])
            #expect(result.exitCode == 0)
            #expect(result.output == "GET HTTP/1.1  2")
            #expect(result.errors.contains("101 Switching Protocols"))
        }
    }

    @Test func postBody_ArrivesOverHTTP2() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            // Curl.run reads its pipe only after exit: keep the output under the 64 KiB pipe buffer.
            let body = String(repeating: "b", count: 40_000)
            let result = try await Curl.run([
                "--http2-prior-knowledge", "--data-binary", body, "http://127.0.0.1:\(port)/echo",
            ])
            #expect(result.output == "POST HTTP/2 \(body)")
        }
    }

    @Test func parallelRequests_ShareOneConnection() async throws {
        try await withTestServer(router: Self.router()) { server, port in
            // curl 7.88 fails `--parallel` with `--http2-prior-knowledge` (exit 16, also against
            // nghttpd), so this goes through the upgrade, then multiplexes on that connection.
            let urls = (0..<20).map { _ in "http://127.0.0.1:\(port)/health" }
            let result = try await Curl.run(["--http2", "--parallel", "--parallel-max", "20", "--verbose"] + urls)
            #expect(result.exitCode == 0)
            #expect(result.output == String(repeating: "ok", count: 20))
            #expect(result.errors.contains("Re-using existing connection"))
            #expect(server.stats.openConnections <= 1)
        }
    }

    @Test func eventStream_EndsCleanlyOverHTTP2() async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let result = try await Curl.run(["--http2-prior-knowledge", "-N", "http://127.0.0.1:\(port)/events"])
            #expect(result.exitCode == 0)
            // A heartbeat comes first when the handler's task starts late (a loaded machine).
            let events = result.output.replacing(": keep-alive\n\n", with: "")
            #expect(events == "id: 1\ndata: event 1\n\nid: 2\ndata: event 2\n\nid: 3\ndata: event 3\n\n")
        }
    }

    @Test(arguments: ["--http2-prior-knowledge", "--http1.1"])
    func gzip_IsNegotiatedOnEitherProtocol(protocolFlag: String) async throws {
        try await withTestServer(router: Self.router()) { _, port in
            let body = try await Curl.run([protocolFlag, "--compressed", "http://127.0.0.1:\(port)/json"])
            #expect(body.output == "[\(Self.json.dropLast())]")
            let head = try await Curl.run([
                protocolFlag, "--compressed", "-D", "-", "-o", "/dev/null", "http://127.0.0.1:\(port)/json",
            ])
            #expect(head.output.lowercased().contains("content-encoding: gzip"))
            let events = try await Curl.run([
                protocolFlag, "--compressed", "-N", "-D", "-", "http://127.0.0.1:\(port)/events",
            ])
            #expect(events.output.lowercased().contains("content-encoding: gzip"))
            #expect(events.output.hasSuffix("id: 3\ndata: event 3\n\n"))
        }
    }
}
