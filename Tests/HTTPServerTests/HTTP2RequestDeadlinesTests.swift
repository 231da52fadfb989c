import HTTP2
import SocketLoop
import Testing

@testable import HTTPServer

/// The HTTP/1.1 deadlines for HTTP/2, on a manual clock: header 10 s, body pieces 60 s apart.
@Suite struct HTTP2RequestDeadlinesTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func at(_ seconds: Double) -> LoopInstant { start.advanced(by: .seconds(seconds)) }

    func makeDeadlines() -> HTTP2RequestDeadlines {
        HTTP2RequestDeadlines(headerTimeout: .seconds(10), bodyTimeout: .seconds(60), now: start)
    }

    func arriving(_ stream: Int32, headers: Bool, body: Int = 0) -> HTTP2ServerSession.ArrivingRequest {
        .init(stream: HTTP2StreamID(stream), headersComplete: headers, bodyBytes: body)
    }

    @Test func aPrefaceThatNeverCompletes_ClosesAfterTheHeaderTimeout() {
        var deadlines = makeDeadlines()
        #expect(deadlines.deadline == at(10))
        #expect(deadlines.expired(now: at(9)) == .none)
        #expect(deadlines.expired(now: at(10)) == .close)
    }

    @Test func aCompletePreface_NeedsNoDeadline() {
        var deadlines = makeDeadlines()
        deadlines.track([], prefaceDone: true, now: at(1))
        #expect(deadlines.deadline == nil)
        #expect(deadlines.expired(now: at(1000)) == .none)
    }

    @Test func aHeaderBlockStalled_EndsTheConnectionTimedFromItsStart() {
        var deadlines = makeDeadlines()
        deadlines.track([arriving(1, headers: false)], prefaceDone: true, now: at(2))
        // More CONTINUATION pieces do not move the header deadline.
        deadlines.track([arriving(1, headers: false)], prefaceDone: true, now: at(8))
        #expect(deadlines.deadline == at(12))
        #expect(deadlines.expired(now: at(11.9)) == .none)
        #expect(deadlines.expired(now: at(12)) == .endConnection)
    }

    @Test func aBodyThatStalls_ResetsItsStreamAndProgressPostponesIt() {
        var deadlines = makeDeadlines()
        deadlines.track([arriving(1, headers: true), arriving(3, headers: true)], prefaceDone: true, now: at(1))
        #expect(deadlines.deadline == at(61))
        // Stream 3 sends a piece at 50 s: its deadline moves; stream 1's does not.
        deadlines.track(
            [arriving(1, headers: true), arriving(3, headers: true, body: 100)], prefaceDone: true, now: at(50))
        #expect(deadlines.expired(now: at(61)) == .resetStreams([HTTP2StreamID(1)]))
        #expect(deadlines.deadline == at(110))
        // Handed to the router (no longer arriving): forgotten.
        deadlines.track([], prefaceDone: true, now: at(70))
        #expect(deadlines.deadline == nil)
    }

    @Test func afterGoAway_TheConnectionClosesAfterTheGrace() {
        var deadlines = makeDeadlines()
        deadlines.track([], prefaceDone: true, now: at(1))
        deadlines.wentAway(now: at(100))
        deadlines.wentAway(now: at(105))  // the first GOAWAY starts the grace
        #expect(deadlines.deadline == at(110))
        #expect(deadlines.expired(now: at(110)) == .close)
    }
}

extension HTTP2RequestDeadlinesTests {
    @Test func aTricklingBodyIsResetOnceBelowTheMinimumRate() {
        var deadlines = makeDeadlines()
        deadlines.minBodyRate = 1000
        deadlines.track([arriving(1, headers: true)], prefaceDone: true, now: at(0))
        #expect(deadlines.deadline == at(10))
        deadlines.track([arriving(1, headers: true, body: 1)], prefaceDone: true, now: at(5))
        deadlines.track([arriving(1, headers: true, body: 2)], prefaceDone: true, now: at(9))
        #expect(deadlines.deadline == at(10.002))
        #expect(deadlines.expired(now: at(10.002)) == .resetStreams([HTTP2StreamID(1)]))
    }
    func queued(_ stream: Int32, sent: Int, queued: Int = 1000) -> HTTP2ServerSession.QueuedResponse {
        .init(stream: HTTP2StreamID(stream), sentBytes: sent, queuedBytes: queued)
    }

    @Test func aResponseAtAZeroWindow_IsResetAfterTheIdleTimeoutWithoutProgress() {
        var deadlines = makeDeadlines()
        deadlines.track([], prefaceDone: true, now: at(1))
        deadlines.trackSending([queued(1, sent: 4096)], now: at(1))
        // Nothing taken since: the deadline stays where it was set.
        deadlines.trackSending([queued(1, sent: 4096)], now: at(50))
        #expect(deadlines.deadline == at(61))
        #expect(deadlines.expired(now: at(60)) == .none)
        #expect(deadlines.expired(now: at(61)) == .resetStreams([HTTP2StreamID(1)]))
        #expect(deadlines.deadline == nil)
    }

    @Test func aSlowReader_KeepsItsStreamWhileItTakesBytes() {
        var deadlines = makeDeadlines()
        deadlines.track([], prefaceDone: true, now: at(1))
        for second in stride(from: 1, through: 300, by: 30) {
            deadlines.trackSending([queued(3, sent: second * 100)], now: at(Double(second)))
            #expect(deadlines.expired(now: at(Double(second) + 59)) == .none)
        }
        // Drained: forgotten.
        deadlines.trackSending([], now: at(300))
        #expect(deadlines.deadline == nil)
    }

    @Test func stalledResponsesAndStalledBodies_AreResetTogether() {
        var deadlines = makeDeadlines()
        deadlines.track([arriving(5, headers: true, body: 10)], prefaceDone: true, now: at(1))
        deadlines.trackSending([queued(3, sent: 0)], now: at(1))
        #expect(deadlines.expired(now: at(61)) == .resetStreams([HTTP2StreamID(3), HTTP2StreamID(5)]))
    }
}
