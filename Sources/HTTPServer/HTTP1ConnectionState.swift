import SocketLoop

/// The lifecycle of one HTTP/1.1 connection and its deadlines, as a value: the handler reports
/// what happened and the current time, and reads back the phase, the next deadline and what to
/// do when that deadline passes. Tests drive it with any instants (a manual clock).
struct HTTP1ConnectionState: Sendable {
    enum Phase: Sendable, Equatable {
        /// Waiting for the first byte of the next request (idle keep-alive timeout).
        case idle
        /// Some of a request head has arrived (header read timeout: slowloris).
        case readingHead
        /// Reading a request body (idle timeout between pieces).
        case readingBody
        /// The request is with its handler (no deadline: handlers may take their time).
        case responding
        /// An event stream is open (heartbeat deadline).
        case streaming
        case closed
    }

    struct Timeouts: Sendable {
        var headerRead: Duration
        var idle: Duration
        var heartbeat: Duration
    }

    enum DeadlineAction: Sendable, Equatable {
        case none
        /// Close without a response (idle keep-alive expired).
        case close
        /// Answer 408 and close (head or body too slow).
        case requestTimeout
        /// Write a heartbeat comment on the stream.
        case heartbeat
    }

    enum QuiesceAction: Sendable, Equatable {
        case closeNow
        /// Let the request in flight finish, answering with `Connection: close`.
        case finishThenClose
        case endStream
    }

    let timeouts: Timeouts
    private(set) var phase = Phase.idle
    private(set) var deadline: LoopInstant?
    private(set) var isQuiescing = false

    init(timeouts: Timeouts, now: LoopInstant) {
        self.timeouts = timeouts
        deadline = now.advanced(by: timeouts.idle)
    }

    /// Bytes of a request head are buffered.
    mutating func headStarted(now: LoopInstant) {
        guard phase == .idle else { return }
        phase = .readingHead
        deadline = now.advanced(by: timeouts.headerRead)
    }

    mutating func headComplete(now: LoopInstant, expectsBody: Bool) {
        phase = expectsBody ? .readingBody : .responding
        deadline = expectsBody ? now.advanced(by: timeouts.idle) : nil
    }

    mutating func bodyProgressed(now: LoopInstant) {
        guard phase == .readingBody else { return }
        deadline = now.advanced(by: timeouts.idle)
    }

    mutating func bodyComplete() {
        phase = .responding
        deadline = nil
    }

    /// The response (or stream) finished; returns whether to read the next request.
    mutating func responseComplete(now: LoopInstant, keepAlive: Bool) -> Bool {
        guard keepAlive, !isQuiescing, phase != .closed else {
            phase = .closed
            deadline = nil
            return false
        }
        phase = .idle
        deadline = now.advanced(by: timeouts.idle)
        return true
    }

    mutating func streamOpened(now: LoopInstant) {
        phase = .streaming
        deadline = now.advanced(by: timeouts.heartbeat)
    }

    mutating func deadlinePassed(now: LoopInstant) -> DeadlineAction {
        guard let deadline, deadline <= now else { return .none }
        switch phase {
        case .idle:
            phase = .closed
            self.deadline = nil
            return .close
        case .readingHead, .readingBody:
            phase = .closed
            self.deadline = nil
            return .requestTimeout
        case .streaming:
            self.deadline = now.advanced(by: timeouts.heartbeat)
            return .heartbeat
        case .responding, .closed:
            self.deadline = nil
            return .none
        }
    }

    mutating func quiesce() -> QuiesceAction {
        isQuiescing = true
        switch phase {
        case .idle, .closed:
            phase = .closed
            deadline = nil
            return .closeNow
        case .readingHead, .readingBody, .responding:
            return .finishThenClose
        case .streaming:
            return .endStream
        }
    }

    /// The request was rejected or the connection closed.
    mutating func close() {
        phase = .closed
        deadline = nil
    }
}
