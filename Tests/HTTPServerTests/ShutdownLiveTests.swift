import Dispatch
import Glibc
import HTTPServer
import HTTPTypes
import Logging
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// Graceful shutdown: requests in flight finish, streams end, idle connections close.
@Suite struct ShutdownLiveTests {
    @Test func finishesInFlightRequestsEndsStreamsAndClosesIdleConnections() async throws {
        let group = EventBroadcaster()
        let released = Atomic<Bool>(false)
        var router = Router()
        router.get("/slow") { _, context in
            let responder = context.responder
            DispatchQueue.global().async {
                // Answer only once shutdown has begun.
                while !released.load(ordering: .acquiring) { usleep(5000) }
                responder.respond(.text("finished"))
            }
            return .deferred
        }
        router.get("/subscribe") { _, context in
            group.add(context.openEventStream())
            return .streamOpened
        }
        router.get("/now") { _, _ in .text("now") }

        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: 2)
        configuration.gracePeriod = .seconds(30)
        let server = HTTPServer(configuration: configuration, router: router, logger: .init(label: "test"))
        try server.start()
        let port = try #require(server.boundPorts.first)

        let idle = try HTTPTestClient(port: port)
        idle.send("GET /now HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await idle.readResponse()?.text == "now")
        let streaming = try HTTPTestClient(port: port)
        streaming.send("GET /subscribe HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await streaming.read(untilContains: "\r\n\r\n").contains("200 OK"))
        #expect(await waitUntil { group.subscriberCount == 1 })
        let inFlight = try HTTPTestClient(port: port)
        inFlight.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await waitUntil { server.stats.requests == 3 })

        let shutdown = Task { await server.shutdown() }
        #expect(await idle.socket.waitForClose())
        #expect(await streaming.readToEnd().hasSuffix("0\r\n\r\n"))
        #expect(throws: TestSocket.Failure.self) { try TestSocket(port: port) }
        released.store(true, ordering: .releasing)
        let answer = try #require(await inFlight.readResponse())
        #expect(answer.text == "finished")
        #expect(answer.header("Connection") == "close")
        await shutdown.value
        #expect(server.stats.openConnections == 0)
    }

    @Test func gracePeriodBoundsShutdown() async throws {
        var router = Router()
        router.get("/never") { _, context in
            let responder = context.responder
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(600)) { responder.respond(.text("late")) }
            return .deferred
        }
        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: 1)
        configuration.gracePeriod = .milliseconds(300)
        let server = HTTPServer(configuration: configuration, router: router, logger: .init(label: "test"))
        try server.start()
        let client = try HTTPTestClient(port: try #require(server.boundPorts.first))
        client.send("GET /never HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await waitUntil { server.stats.requests == 1 })
        await server.shutdown()
        #expect(await client.readToEnd().isEmpty)
        #expect(server.stats.openConnections == 0)
    }
}
