import Foundation
import HTTPServer
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// A stream joining a broadcast group while its loop is busy still gets every event broadcast
/// after the join, after its catch-up: the join counts the loop at once, and the broadcast queues
/// behind the task that writes the catch-up (a subscriber used to miss a change set committed
/// between its subscription and that task).
@Suite struct BroadcastJoinLiveTests {
    final class Box: Sendable {
        let opened = Mutex<EventStream?>(nil)
    }

    /// `GET /open` opens an event stream and leaves it in `box`.
    static func router(keepingStreamsIn box: Box) -> Router {
        var router = Router()
        router.get("/open") { _, context in
            let stream = context.openEventStream()
            box.opened.withLock { $0 = stream }
            return .streamOpened
        }
        return router
    }

    @Test("an event broadcast right after add reaches the stream, after its catch-up, even with its loop busy")
    func broadcastRightAfterJoin() async throws {
        let box = Box()
        let router = Self.router(keepingStreamsIn: box)
        try await withTestServer(loops: 1, router: router) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /open HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.read(untilContains: "\r\n\r\n").contains("200 OK"))
            let stream = try #require(box.opened.withLock { $0 })
            let group = EventBroadcaster()
            // Hold the loop so the join's task cannot run before the broadcast is issued.
            let held = DispatchSemaphore(value: 0)
            let holding = DispatchSemaphore(value: 0)
            stream.loop.execute {
                holding.signal()
                held.wait()
            }
            holding.wait()
            group.add(stream, catchUp: [SSEEvent(id: "1", data: "catch-up").encoded()])
            group.broadcast(SSEEvent(id: "2", data: "live"))
            held.signal()
            let text = await client.read(untilContains: "data: live\n\n")
            let catchUp = try #require(text.range(of: "id: 1\ndata: catch-up\n\n"))
            let live = try #require(text.range(of: "id: 2\ndata: live\n\n"))
            #expect(catchUp.upperBound <= live.lowerBound)
            #expect(await waitUntil { group.subscriberCount == 1 })
        }
    }

    @Test("an event is encoded only when a stream is there to take it")
    func encodedOnlyForStreams() async throws {
        let box = Box()
        let router = Self.router(keepingStreamsIn: box)
        try await withTestServer(loops: 1, router: router) { _, port in
            let group = EventBroadcaster()
            let encodings = Mutex(0)
            let encode = { @Sendable () -> EncodedEvent in
                encodings.withLock { $0 += 1 }
                return SSEEvent(id: "1", data: "only-one").encoded()
            }
            #expect(group.broadcast(encoding: encode) == 0)
            #expect(encodings.withLock { $0 } == 0, "nobody follows: nothing encoded")

            let client = try HTTPTestClient(port: port)
            client.send("GET /open HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.read(untilContains: "\r\n\r\n").contains("200 OK"))
            let stream = try #require(box.opened.withLock { $0 })
            group.add(stream)
            // (Its count of subscribers follows once the join has run on the loop.)
            group.broadcast(encoding: encode)
            #expect(await client.read(untilContains: "data: only-one\n\n").contains("id: 1\n"))
            #expect(encodings.withLock { $0 } == 1)
        }
    }
}
