import HTTPServer
import HTTPTypes
import Synchronization
import TestSupport
import Testing

/// Event streams, broadcast and slow-subscriber policy over real sockets.
@Suite struct EventStreamLiveTests {
    final class Box: Sendable {
        let group = EventBroadcaster()
        let closed = Atomic<Int>(0)
    }

    static func router(_ box: Box) -> Router {
        var router = Router()
        router.get("/three") { _, context in
            let stream = context.openEventStream(headers: [.init("X-Stream")!: "yes"])
            for index in 1...3 { stream.send(SSEEvent(id: String(index), event: "tick", data: "n\(index)")) }
            stream.close()
            return .streamOpened
        }
        router.get("/subscribe") { _, context in
            let stream = context.openEventStream()
            stream.onClose { box.closed.add(1, ordering: .relaxed) }
            box.group.add(stream)
            return .streamOpened
        }
        router.get("/now") { _, _ in .text("now") }
        return router
    }

    @Test func streamSendsChunkedEventsThenEndsAndTheConnectionIsReused() async throws {
        try await withTestServer(router: Self.router(Box())) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /three HTTP/1.1\r\nHost: a\r\n\r\n")
            let text = await client.read(untilContains: "0\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(text.contains("Content-Type: text/event-stream\r\n"))
            #expect(text.contains("Cache-Control: no-cache\r\n"))
            #expect(text.contains("X-Accel-Buffering: no\r\n"))
            #expect(text.contains("X-Stream: yes\r\n"))
            #expect(text.contains("Transfer-Encoding: chunked\r\n"))
            #expect(
                text.hasSuffix(
                    "\r\n\r\n1c\r\nid: 1\nevent: tick\ndata: n1\n\n\r\n" + "1c\r\nid: 2\nevent: tick\ndata: n2\n\n\r\n"
                        + "1c\r\nid: 3\nevent: tick\ndata: n3\n\n\r\n0\r\n\r\n"))
            client.send("GET /now HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.readResponse()?.text == "now")
        }
    }

    @Test func http10StreamIsCloseDelimited() async throws {
        try await withTestServer(router: Self.router(Box())) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /three HTTP/1.0\r\n\r\n")
            let text = await client.readToEnd()
            #expect(!text.contains("Transfer-Encoding"))
            #expect(
                text.hasSuffix(
                    "\r\n\r\nid: 1\nevent: tick\ndata: n1\n\nid: 2\nevent: tick\ndata: n2\n\nid: 3\nevent: tick\ndata: n3\n\n"
                ))
        }
    }

    @Test func broadcastReachesSubscribersOnEveryLoopAndPeersLeavingAreRemoved() async throws {
        let box = Box()
        try await withTestServer(router: Self.router(box)) { server, port in
            var clients: [HTTPTestClient] = []
            for _ in 0..<8 {
                let client = try HTTPTestClient(port: port)
                client.send("GET /subscribe HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(await client.read(untilContains: "\r\n\r\n").contains("200 OK"))
                clients.append(client)
            }
            #expect(await waitUntil { box.group.subscriberCount == 8 })
            #expect(server.stats.openStreams == 8)
            #expect(box.group.broadcast(SSEEvent(id: "7", data: "first")) == 8)
            box.group.broadcast(SSEEvent(id: "8", data: "second"))
            for client in clients {
                let text = await client.read(untilContains: "data: second\n\n")
                #expect(text.contains("id: 7\ndata: first\n\n"))
                #expect(text.contains("id: 8\ndata: second\n\n"))
            }
            clients.removeAll()
            #expect(await waitUntil { box.group.subscriberCount == 0 })
            #expect(box.closed.load(ordering: .relaxed) == 8)
            #expect(server.stats.openStreams == 0)
        }
    }

    @Test func slowSubscriberIsDroppedAndLeavesTheGroup() async throws {
        let box = Box()
        let smallCap: (inout HTTPServerConfiguration) -> Void = { $0.maxPendingBytes = 256 * 1024 }
        try await withTestServer(configure: smallCap, router: Self.router(box)) { server, port in
            let slow = try HTTPTestClient(port: port)
            slow.send("GET /subscribe HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await slow.read(untilContains: "\r\n\r\n").contains("200 OK"))
            #expect(await waitUntil { box.group.subscriberCount == 1 })
            let payload = String(repeating: "x", count: 32 * 1024)
            // The slow client never reads: the kernel buffers fill, then our queue passes the cap.
            var sent = 0
            while server.stats.droppedSlowSubscribers == 0, sent < 2000 {
                box.group.broadcast(SSEEvent(data: payload))
                sent += 1
                if sent % 50 == 0 { _ = await waitUntil(seconds: 0.05) { server.stats.droppedSlowSubscribers > 0 } }
            }
            #expect(await waitUntil { server.stats.droppedSlowSubscribers == 1 })
            #expect(await waitUntil { box.group.subscriberCount == 0 })
            #expect(box.closed.load(ordering: .relaxed) == 1)
            // What was queued still arrives, then the farewell `event: error`, the last chunk, and
            // the server closes the connection.
            let farewellEvent = HTTPServerConfiguration.defaultSlowSubscriberEvent
            let farewell = String(decoding: farewellEvent.payloadBytes, as: UTF8.self)
            #expect(farewell.hasPrefix("event: error\n"))
            let text = await slow.readToEnd()
            #expect(text.hasSuffix("\r\n" + farewell + "\r\n0\r\n\r\n"))
            #expect(!text.dropLast(farewell.utf8.count).contains("event: error"))
        }
    }

    @Test func heartbeatsKeepQuietStreamsAlive() async throws {
        let quickHeartbeat: (inout HTTPServerConfiguration) -> Void = { $0.heartbeatInterval = .seconds(1) }
        try await withTestServer(configure: quickHeartbeat, router: Self.router(Box())) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /subscribe HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.read(untilContains: ": keep-alive\n\n").contains("e\r\n: keep-alive\n\n\r\n"))
        }
    }
}
