import HTTP2
import HTTPTypes
import SocketLoop
import Testing

@testable import HTTPServer

/// The HTTP/2 handler's one record per stream, as a value: the counts the handler reads on every
/// wake-up follow the records, and removing a stream's record forgets everything it held.
@Suite struct HTTP2StreamTableTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func at(_ seconds: Double) -> LoopInstant { start.advanced(by: .seconds(seconds)) }

    func request(_ path: String, body: Int = 0) -> HTTPServerRequest {
        HTTPServerRequest(
            head: HTTPRequest(method: body > 0 ? .post : .get, scheme: "http", authority: "a", path: path),
            body: [UInt8](repeating: 1, count: body), version: "HTTP/2")
    }

    func stream(_ id: Int32) -> HTTP2StreamID { HTTP2StreamID(id) }

    @Test func waitingRequests_AreRoutedInTheOrderTheyCompleted_NotByStreamID() {
        var table = HTTP2StreamTable()
        // A long upload on stream 1 completes after stream 3's GET.
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/b"))), on: stream(3))
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/a", body: 100))), on: stream(1))
        #expect(table.waitingBodyBytes == 100)
        #expect(table.count == 2)

        let first = table.routeOldestWaiting()
        #expect(first?.stream == stream(3))
        #expect(first?.request.path == "/b")
        let second = table.routeOldestWaiting()
        #expect(second?.stream == stream(1))
        #expect(table.waitingBodyBytes == 0)
        #expect(!table.hasWaiting)
        #expect(table.routeOldestWaiting() == nil)
        // Routed, they stay until their streams close; each is answered once.
        #expect(table.count == 2)
        #expect(table.routedRequest(on: stream(1))?.path == "/a")
        #expect(table.answer(stream(1))?.path == "/a")
        #expect(table.answer(stream(1)) == nil)
        #expect(table.routedRequest(on: stream(1)) == nil)
    }

    @Test func removingAWaitingStream_DropsItsBodyAndItsTurn() {
        var table = HTTP2StreamTable()
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/a", body: 10))), on: stream(1))
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/b", body: 20))), on: stream(3))
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/c", body: 30))), on: stream(5))

        let removed = table.remove(stream(3))
        guard case .waiting(let held)? = removed?.phase else {
            Issue.record("the removed record is not the waiting request")
            return
        }
        // The caller gives this back to the server-wide body budget.
        #expect(held.body.count == 20)
        #expect(table.waitingBodyBytes == 40)
        #expect(table.waitingOrder == [stream(1), stream(5)])
        #expect(table.remove(stream(3)) == nil)
        #expect(table.routeOldestWaiting()?.stream == stream(1))
        #expect(table.routeOldestWaiting()?.stream == stream(5))
        #expect(table.routeOldestWaiting() == nil)
    }

    @Test func cachedBodiesAndResets_AreCountedUntilTheirStreamsClose() {
        var table = HTTP2StreamTable()
        for id: Int32 in [1, 3, 5] {
            _ = table.insert(HTTP2StreamRecord(phase: .routed(request("/\(id)"))), on: stream(id))
        }
        table.markCachedBody(stream(1))
        table.markCachedBody(stream(1))
        table.markCachedBody(stream(3))
        #expect(table.cachedBodies == 2)

        table.resetUnlessClosed(stream(3), at: at(5))
        table.resetUnlessClosed(stream(5), at: at(2))
        #expect(table.pendingResets == 2)
        #expect(table.earliestReset == at(2))
        // A stream without a record (closed already) is not reset.
        table.resetUnlessClosed(stream(7), at: at(1))
        #expect(table.earliestReset == at(2))

        #expect(table.takeDueResets(now: at(1)) == [])
        #expect(table.takeDueResets(now: at(2)) == [stream(5)])
        #expect(table.pendingResets == 1)
        #expect(table.earliestReset == at(5))

        _ = table.remove(stream(3))
        #expect(table.cachedBodies == 1)
        #expect(table.pendingResets == 0)
        #expect(table.earliestReset == nil)
        #expect(table.takeDueResets(now: at(10)) == [])
        _ = table.remove(stream(1))
        _ = table.remove(stream(5))
        #expect(table.count == 0)
        #expect(table.cachedBodies == 0)
    }

    @Test func aRecordReplacedOnTheSameStream_IsReturnedAndUncounted() {
        var table = HTTP2StreamTable()
        _ = table.insert(HTTP2StreamRecord(phase: .waiting(request("/a", body: 10))), on: stream(1))
        let replaced = table.insert(HTTP2StreamRecord(phase: .routed(request("/b"))), on: stream(1))
        #expect(replaced != nil)
        #expect(table.count == 1)
        #expect(table.waitingBodyBytes == 0)
        #expect(!table.hasWaiting)
    }
}
