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
        /// Reading a request body (idle timeout between pieces, and the minimum rate).
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
        /// Bytes per second a request body must average once past its first `headerRead` of
        /// grace; 0 for no minimum (only the idle timeout between pieces).
        var minBodyRate: Int = 0

        /// When a body begun at `start` with `received` bytes so far must be complete, given
        /// that its last piece came at `now`: within the idle timeout of that piece, and —
        /// with a minimum rate — by `start` + grace + what the rate allows for `received`.
        func bodyDeadline(start: LoopInstant, received: Int, now: LoopInstant) -> LoopInstant {
            let betweenPieces = now.advanced(by: idle)
            guard minBodyRate > 0 else { return betweenPieces }
            let allowed = headerRead + .milliseconds(Int64(received) * 1000 / Int64(minBodyRate))
            return min(betweenPieces, start.advanced(by: allowed))
        }
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
    /// When the body being read began.
    private var bodyStart: LoopInstant?
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
        bodyStart = expectsBody ? now : nil
        deadline = expectsBody ? timeouts.bodyDeadline(start: now, received: 0, now: now) : nil
    }

    /// `received` bytes of the body have arrived in all (a trickle keeps it open only at the
    /// minimum rate: 1 byte every 5 s no longer holds a connection for minutes).
    mutating func bodyProgressed(now: LoopInstant, received: Int) {
        guard phase == .readingBody else { return }
        deadline = timeouts.bodyDeadline(start: bodyStart ?? now, received: received, now: now)
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

    /// What the passed deadline calls for. `sending`: the last response is still being written
    /// (the peer reads it slowly) — not idle yet; the socket's send timeout bounds a peer that
    /// reads nothing.
    mutating func deadlinePassed(now: LoopInstant, sending: Bool = false) -> DeadlineAction {
        guard let deadline, deadline <= now else { return .none }
        switch phase {
        case .idle where sending:
            self.deadline = now.advanced(by: timeouts.idle)
            return .none
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
