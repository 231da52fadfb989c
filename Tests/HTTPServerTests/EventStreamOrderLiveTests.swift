import HTTPServer
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// An event stream writes events in the order they were sent, whichever thread sent them: one
/// sent from another thread while the loop is busy comes before one the loop sends after it, and
/// an end comes after what was sent before it and before anything sent after it.
@Suite struct EventStreamOrderLiveTests {
    final class Box: Sendable {
        let stream = Mutex<EventStream?>(nil)
        let group = EventBroadcaster()
        let loopBusy = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
    }

    static func router(_ box: Box) -> Router {
        var router = Router()
        router.get("/held") { _, context in
            let stream = context.openEventStream()
            box.stream.withLock { $0 = stream }
            return .streamOpened
        }
        router.get("/group") { _, context in
            let stream = context.openEventStream()
            box.stream.withLock { $0 = stream }
            box.group.add(stream)
            return .streamOpened
        }
        return router
    }

    /// Opens `path`'s stream and keeps its loop busy (bounded) until `box.release` is set; then
    /// the loop runs `then`. Returns the client and the stream once the loop is busy.
    static func openAndHoldTheLoop(
        _ path: String, _ box: Box, port: Int, then: @escaping @Sendable (EventStream) -> Void = { _ in }
    ) async throws -> (HTTPTestClient, EventStream) {
        let client = try HTTPTestClient(port: port)
        client.send("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(await client.read(untilContains: "\r\n\r\n").contains("200 OK"))
        #expect(await waitUntil { box.stream.withLock { $0 } != nil })
        let stream = try #require(box.stream.withLock { $0 })
        stream.loop.execute {
            box.loopBusy.store(true, ordering: .releasing)
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(20))
            while !box.release.load(ordering: .acquiring), clock.now < deadline {}
            then(stream)
        }
        #expect(await waitUntil { box.loopBusy.load(ordering: .acquiring) })
        return (client, stream)
    }

    @Test func anEventQueuedFromAnotherThreadIsWrittenBeforeOneTheLoopSendsLater() async throws {
        let box = Box()
        try await withTestServer(router: Self.router(box)) { _, port in
            let (client, stream) = try await Self.openAndHoldTheLoop("/held", box, port: port) { stream in
                stream.send(SSEEvent(id: "2", data: "second"))
                stream.close()
            }
            // The loop is busy: this event waits in its queue, behind the task that holds it.
            stream.send(SSEEvent(id: "1", data: "first"))
            box.release.store(true, ordering: .releasing)
            let text = await client.read(untilContains: "0\r\n\r\n")
            #expect(text == "13\r\nid: 1\ndata: first\n\n\r\n" + "14\r\nid: 2\ndata: second\n\n\r\n0\r\n\r\n")
        }
    }

    @Test func aGroupClosedAfterAnEventEndsItsStreamsBeforeTheNextEvent() async throws {
        let box = Box()
        try await withTestServer(router: Self.router(box)) { _, port in
            #expect(box.group.subscriberCount == 0)
            let (client, _) = try await Self.openAndHoldTheLoop("/group", box, port: port)
            #expect(await waitUntil { box.group.subscriberCount == 1 })
            box.group.broadcast(SSEEvent(id: "1", data: "first"))
            box.group.closeAll()
            box.group.broadcast(SSEEvent(id: "2", data: "after the end"))
            box.release.store(true, ordering: .releasing)
            let text = await client.read(untilContains: "0\r\n\r\n")
            #expect(text == "13\r\nid: 1\ndata: first\n\n\r\n0\r\n\r\n")
        }
    }
}
