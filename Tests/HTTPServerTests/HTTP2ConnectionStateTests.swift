import SocketLoop
import Testing

@testable import HTTPServer

@Suite struct HTTP2ConnectionStateTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func at(_ seconds: Double) -> LoopInstant { start.advanced(by: .seconds(seconds)) }

    func makeState() -> HTTP2ConnectionState {
        HTTP2ConnectionState(idleTimeout: .seconds(60), heartbeatInterval: .seconds(15), now: start)
    }

    @Test func idleConnection_GoesAwayAfterTheIdleTimeout() {
        var state = makeState()
        #expect(state.deadline == at(60))
        #expect(state.deadlinePassed(now: at(59)) == .none)
        #expect(state.deadlinePassed(now: at(60)) == .goAway)
        #expect(state.deadline == nil)
    }

    @Test func requestsInFlight_HaveNoDeadline() {
        var state = makeState()
        state.update(activeStreams: 2, eventStreams: 0, now: at(10))
        #expect(state.deadline == nil)
        #expect(state.deadlinePassed(now: at(1000)) == .none)
        // The last one finishes: the idle timeout starts from then.
        state.update(activeStreams: 0, eventStreams: 0, now: at(20))
        #expect(state.deadline == at(80))
    }

    @Test func eventStreams_GetHeartbeats() {
        var state = makeState()
        state.update(activeStreams: 1, eventStreams: 1, now: at(5))
        #expect(state.deadline == at(20))
        #expect(state.deadlinePassed(now: at(20)) == .heartbeat)
        #expect(state.deadline == at(35))
        // More streams opening does not postpone the heartbeat of the ones already open.
        state.update(activeStreams: 3, eventStreams: 3, now: at(30))
        #expect(state.deadline == at(35))
        #expect(state.deadlinePassed(now: at(36)) == .heartbeat)
    }

    @Test func lastEventStreamClosing_StartsTheIdleTimeout() {
        var state = makeState()
        state.update(activeStreams: 1, eventStreams: 1, now: at(5))
        state.update(activeStreams: 0, eventStreams: 0, now: at(100))
        #expect(state.deadline == at(160))
        #expect(state.deadlinePassed(now: at(160)) == .goAway)
    }

    @Test func idleUpdates_DoNotPostponeTheIdleTimeout() {
        var state = makeState()
        state.update(activeStreams: 0, eventStreams: 0, now: at(30))
        #expect(state.deadline == at(60))
    }
}
