import HTTPServer
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// An event stream writes events in the order they were sent, whichever thread sent them: one
/// sent from another thread while the loop is busy comes before one the loop sends after it.
@Suite struct EventStreamOrderLiveTests {
    final class Box: Sendable {
        let stream = Mutex<EventStream?>(nil)
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
        return router
    }

    /// Blocks `stream`'s loop until the test lets it go, then sends `second` and closes from the loop.
    static func holdLoopThenSendFromIt(_ box: Box, _ stream: EventStream) {
        stream.loop.execute {
            box.loopBusy.store(true, ordering: .releasing)
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(20))
            while !box.release.load(ordering: .acquiring), clock.now < deadline {}
            stream.send(SSEEvent(id: "2", data: "second"))
            stream.close()
        }
    }

    @Test func anEventQueuedFromAnotherThreadIsWrittenBeforeOneTheLoopSendsLater() async throws {
        let box = Box()
        try await withTestServer(router: Self.router(box)) { _, port in
            let client = try HTTPTestClient(port: port)
            client.send("GET /held HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await client.read(untilContains: "\r\n\r\n").contains("200 OK"))
            #expect(await waitUntil { box.stream.withLock { $0 } != nil })
            let stream = try #require(box.stream.withLock { $0 })
            Self.holdLoopThenSendFromIt(box, stream)
            #expect(await waitUntil { box.loopBusy.load(ordering: .acquiring) })
            // The loop is busy: this event waits in its queue, behind the task that holds it.
            stream.send(SSEEvent(id: "1", data: "first"))
            box.release.store(true, ordering: .releasing)
            let text = await client.read(untilContains: "0\r\n\r\n")
            #expect(text == "13\r\nid: 1\ndata: first\n\n\r\n" + "14\r\nid: 2\ndata: second\n\n\r\n0\r\n\r\n")
        }
    }
}
