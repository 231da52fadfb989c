import SocketLoop

/// The deadlines of one HTTP/2 connection, as a value: the handler reports how many streams are
/// active and how many are event streams, and reads back the next deadline and what to do when it
/// passes. Tests drive it with any instants (a manual clock).
///
/// - No active stream: the idle timeout runs; when it passes the connection says GOAWAY and closes.
/// - Event streams open: a heartbeat comment every `heartbeat` on each of them.
/// - Requests in flight but no event stream: no deadline (handlers may take their time).
struct HTTP2ConnectionState: Sendable {
    enum DeadlineAction: Sendable, Equatable {
        case none
        /// Idle too long: GOAWAY and close.
        case goAway
        /// Write a heartbeat comment on every event stream.
        case heartbeat
    }

    let idleTimeout: Duration
    let heartbeatInterval: Duration
    private(set) var deadline: LoopInstant?
    private(set) var activeStreams = 0
    private(set) var eventStreams = 0

    init(idleTimeout: Duration, heartbeatInterval: Duration, now: LoopInstant) {
        self.idleTimeout = idleTimeout
        self.heartbeatInterval = heartbeatInterval
        deadline = now.advanced(by: idleTimeout)
    }

    /// Reports the current counts; restarts the matching deadline when the kind of activity changes.
    mutating func update(activeStreams: Int, eventStreams: Int, now: LoopInstant) {
        let wasIdle = self.activeStreams == 0
        let hadEventStreams = self.eventStreams > 0
        self.activeStreams = activeStreams
        self.eventStreams = eventStreams
        if eventStreams > 0 {
            if !hadEventStreams { deadline = now.advanced(by: heartbeatInterval) }
        } else if activeStreams == 0 {
            if !wasIdle || hadEventStreams || deadline == nil { deadline = now.advanced(by: idleTimeout) }
        } else {
            deadline = nil
        }
    }

    /// What to do now that `deadline` passed (ignored if it has not).
    mutating func deadlinePassed(now: LoopInstant) -> DeadlineAction {
        guard let deadline, deadline <= now else { return .none }
        if eventStreams > 0 {
            self.deadline = now.advanced(by: heartbeatInterval)
            return .heartbeat
        }
        if activeStreams == 0 {
            self.deadline = nil
            return .goAway
        }
        self.deadline = nil
        return .none
    }
}
