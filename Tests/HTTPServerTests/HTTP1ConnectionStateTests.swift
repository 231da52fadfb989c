import SocketLoop
import Testing

@testable import HTTPServer

/// The connection lifecycle driven by a manual clock: instants are plain values.
@Suite struct HTTP1ConnectionStateTests {
    let timeouts = HTTP1ConnectionState.Timeouts(headerRead: .seconds(10), idle: .seconds(60), heartbeat: .seconds(15))
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func at(_ seconds: Int) -> LoopInstant { start.advanced(by: .seconds(seconds)) }

    @Test func idleConnectionClosesAfterTheIdleTimeout() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        #expect(state.phase == .idle)
        #expect(state.deadline == at(60))
        #expect(state.deadlinePassed(now: at(59)) == .none)
        #expect(state.deadlinePassed(now: at(60)) == .close)
        #expect(state.phase == .closed)
    }

    @Test func aResponseStillBeingReadKeepsTheConnectionFromIdling() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        state.headStarted(now: at(1))
        state.headComplete(now: at(1), expectsBody: false)
        let readsNext = state.responseComplete(now: at(2), keepAlive: true)
        #expect(readsNext)
        // A slow reader is still taking the response at the idle deadline: not idle yet.
        #expect(state.deadlinePassed(now: at(62), sending: true) == .none)
        #expect(state.phase == .idle)
        #expect(state.deadline == at(122))
        // Once it is all taken, the idle timeout applies.
        #expect(state.deadlinePassed(now: at(122), sending: false) == .close)
    }

    @Test func slowHeadGetsRequestTimeoutAfterTheHeaderTimeout() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        state.headStarted(now: at(5))
        #expect(state.phase == .readingHead)
        // More bytes of the same head do not extend the deadline (slowloris).
        state.headStarted(now: at(9))
        #expect(state.deadline == at(15))
        #expect(state.deadlinePassed(now: at(14)) == .none)
        #expect(state.deadlinePassed(now: at(15)) == .requestTimeout)
    }

    @Test func bodyProgressExtendsTheDeadline() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        state.headStarted(now: start)
        state.headComplete(now: at(1), expectsBody: true)
        #expect(state.phase == .readingBody)
        state.bodyProgressed(now: at(50), received: 100)
        #expect(state.deadline == at(110))
        state.bodyComplete()
        #expect(state.phase == .responding)
        #expect(state.deadline == nil)
        #expect(state.deadlinePassed(now: at(1000)) == .none)
    }

    @Test func aBodyBelowTheMinimumRateTimesOutAfterTheGrace() {
        var withRate = timeouts
        withRate.minBodyRate = 1000  // bytes per second, after 10 s of grace
        var state = HTTP1ConnectionState(timeouts: withRate, now: start)
        state.headStarted(now: start)
        state.headComplete(now: at(1), expectsBody: true)
        #expect(state.deadline == at(11))
        // One byte every 5 s: each piece comes well inside the idle timeout, yet the body may
        // only take 10 s + 1 ms per byte.
        state.bodyProgressed(now: at(6), received: 1)
        state.bodyProgressed(now: at(11), received: 2)
        #expect(state.deadline == at(11).advanced(by: .milliseconds(2)))
        #expect(state.deadlinePassed(now: at(11).advanced(by: .milliseconds(2))) == .requestTimeout)
    }

    @Test func aBodyAtTheMinimumRateIsGivenTheTimeItNeeds() {
        var withRate = timeouts
        withRate.minBodyRate = 1000
        var state = HTTP1ConnectionState(timeouts: withRate, now: start)
        state.headStarted(now: start)
        state.headComplete(now: at(0), expectsBody: true)
        // 100 KB in 100 s (exactly the rate): the deadline stays ahead of every piece.
        for second in stride(from: 10, through: 100, by: 10) {
            state.bodyProgressed(now: at(second), received: second * 1000)
            #expect(state.deadline == at(second + 10))
        }
        // A pause longer than the idle timeout still ends it, whatever the rate allows.
        state.bodyProgressed(now: at(100), received: 10_000_000)
        #expect(state.deadline == at(160))
    }

    @Test func keepAliveReturnsToIdleAndCloseEnds() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        state.headStarted(now: start)
        state.headComplete(now: start, expectsBody: false)
        let continues = state.responseComplete(now: at(2), keepAlive: true)
        #expect(continues)
        #expect(state.phase == .idle)
        #expect(state.deadline == at(62))
        state.headStarted(now: at(3))
        state.headComplete(now: at(3), expectsBody: false)
        let continuesAfterClose = state.responseComplete(now: at(4), keepAlive: false)
        #expect(!continuesAfterClose)
        #expect(state.phase == .closed)
    }

    @Test func streamsGetHeartbeatsAtTheInterval() {
        var state = HTTP1ConnectionState(timeouts: timeouts, now: start)
        state.headComplete(now: start, expectsBody: false)
        state.streamOpened(now: at(1))
        #expect(state.deadline == at(16))
        #expect(state.deadlinePassed(now: at(16)) == .heartbeat)
        #expect(state.deadline == at(31))
        #expect(state.phase == .streaming)
    }

    @Test func quiescingFinishesInFlightWorkThenCloses() {
        var idle = HTTP1ConnectionState(timeouts: timeouts, now: start)
        #expect(idle.quiesce() == .closeNow)

        var responding = HTTP1ConnectionState(timeouts: timeouts, now: start)
        responding.headComplete(now: start, expectsBody: false)
        #expect(responding.quiesce() == .finishThenClose)
        let continuesWhileQuiescing = responding.responseComplete(now: at(1), keepAlive: true)
        #expect(!continuesWhileQuiescing)

        var streaming = HTTP1ConnectionState(timeouts: timeouts, now: start)
        streaming.headComplete(now: start, expectsBody: false)
        streaming.streamOpened(now: start)
        #expect(streaming.quiesce() == .endStream)
    }
}
