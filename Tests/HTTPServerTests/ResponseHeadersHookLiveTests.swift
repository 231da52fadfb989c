import HTTPServer
import HTTPTypes
import Synchronization
import TestSupport
import Testing

/// `HTTPServerConfiguration.responseHeaders` and the forwarded headers in `AccessLogEntry`.
@Suite struct ResponseHeadersHookLiveTests {
    static func router() -> Router {
        var router = Router()
        router.get("/plain") { _, _ in .text("ok") }
        router.get("/stream") { _, context in
            let stream = context.openEventStream()
            stream.send(SSEEvent(event: "one", data: "1"))
            stream.close()
            return .streamOpened
        }
        return router
    }

    static func configure(_ configuration: inout HTTPServerConfiguration) {
        configuration.responseHeaders = { request, fields in
            fields[HTTPField.Name("X-Echo-Origin")!] = request.headerFields[HTTPField.Name("Origin")!] ?? "none"
        }
    }

    @Test func hookSeesTheRequestAndChangesPlainAndStreamedResponses() async throws {
        try await withTestServer(configure: Self.configure, router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /plain HTTP/1.1\r\nHost: a\r\nOrigin: https://app.example\r\n\r\n")
            let plain = await client.read(untilContains: "ok")
            #expect(plain.contains("X-Echo-Origin: https://app.example\r\n"))
            client.send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
            let streamed = await client.read(untilContains: "0\r\n\r\n")
            #expect(streamed.contains("Content-Type: text/event-stream\r\n"))
            #expect(streamed.contains("X-Echo-Origin: none\r\n"))
        }
    }

    @Test func accessLogCarriesForwardedHeaders() async throws {
        let log = EntryLog()
        let configure: (inout HTTPServerConfiguration) -> Void = { configuration in
            configuration.accessLog = { entry in log.entries.withLock { $0.append(entry) } }
        }
        try await withTestServer(configure: configure, router: Self.router()) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send(
                "GET /plain HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.9\r\nForwarded: for=198.51.100.1\r\n\r\n")
            _ = await client.read(untilContains: "ok")
            #expect(await waitUntil { log.entries.withLock { $0.count } == 1 })
            let entry = try #require(log.entries.withLock { $0.first })
            #expect(entry.forwardedFor == "203.0.113.9")
            #expect(entry.forwarded == "for=198.51.100.1")
            #expect(entry.remoteAddress.hasPrefix("127.0.0.1:"))
        }
    }
}

final class EntryLog: Sendable {
    let entries = Mutex<[AccessLogEntry]>([])
}
