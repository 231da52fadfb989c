import HTTPServer
import Synchronization
import TestSupport
import Testing

/// Requests answered before routing (malformed or smuggling heads, limits, deadlines) are seen:
/// each gets an access-log entry with its reason and is counted in the server's stats.
@Suite struct RejectionLogLiveTests {
    static func router() -> Router {
        var router = Router()
        router.get("/plain") { _, _ in .text("ok") }
        return router
    }

    static func logging(into log: EntryLog, headerTimeout: Duration? = nil) -> (inout HTTPServerConfiguration) -> Void {
        { configuration in
            configuration.accessLog = { entry in log.entries.withLock { $0.append(entry) } }
            if let headerTimeout { configuration.headerReadTimeout = headerTimeout }
        }
    }

    @Test(
        "a refused head is logged with its status and reason, and counted",
        arguments: [
            ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nBad\nHeader: 1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 20000) + "\r\n\r\n", 431),
            ("G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ])
    func refusedHeads(_ request: String, _ status: Int) async throws {
        let log = EntryLog()
        try await withTestServer(configure: Self.logging(into: log), router: Self.router()) { server, port in
            let client = try HTTPTestClient(port: port)
            client.send(request)
            let answer = await client.read(untilContains: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 \(status)"))
            #expect(await waitUntil { log.entries.withLock { $0.count } == 1 })
            let entry = try #require(log.entries.withLock { $0.first })
            #expect(entry.status == status)
            #expect(entry.method == "-" && entry.target == "-" && entry.route == nil)
            let reason = try #require(entry.rejection)
            #expect(answer.contains(reason), "the logged reason is the one answered: \(reason)")
            #expect(server.stats.rejectedBeforeRouting == 1)
            #expect(server.stats.requests == 0)
        }
    }

    @Test("a head that does not arrive in time is answered 408, logged and counted")
    func slowHead() async throws {
        let log = EntryLog()
        try await withTestServer(
            configure: Self.logging(into: log, headerTimeout: .milliseconds(300)), router: Self.router()
        ) { server, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /plain HTTP/1.1\r\nHost: a\r\n")
            let answer = await client.read(untilContains: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 408"))
            #expect(await waitUntil { log.entries.withLock { $0.count } == 1 })
            #expect(log.entries.withLock { $0.first?.rejection } == "request not received in time")
            #expect(server.stats.rejectedBeforeRouting == 1)
        }
    }

    @Test("a routed request carries no rejection")
    func routedRequest() async throws {
        let log = EntryLog()
        try await withTestServer(configure: Self.logging(into: log), router: Self.router()) { server, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /plain HTTP/1.1\r\nHost: a\r\n\r\n")
            _ = await client.read(untilContains: "ok")
            #expect(await waitUntil { log.entries.withLock { $0.count } == 1 })
            #expect(log.entries.withLock { $0.first?.rejection } == nil)
            #expect(server.stats.rejectedBeforeRouting == 0)
        }
    }
}
