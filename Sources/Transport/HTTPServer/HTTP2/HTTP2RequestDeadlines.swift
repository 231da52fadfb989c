import HTTP2
import SocketLoop

/// The deadlines HTTP/2 requests share with HTTP/1.1, as a value the connection handler feeds and
/// reads (tests drive it with a manual clock):
///
/// - **Preface**: the client's connection preface and first frame must arrive within the header
///   timeout, like a request head; otherwise the connection closes.
/// - **Header block**: a request's header block must be complete within the header timeout of its
///   first HEADERS frame. An unfinished block holds the whole connection (no other frame may come
///   between its pieces), so the connection is ended.
/// - **Body**: once the headers are complete, each further piece of the request (DATA, or
///   END_STREAM for a GET sent without it) must come within the idle timeout of the last one;
///   otherwise the stream is reset (CANCEL).
/// - **Sending**: a response with bytes queued must make progress (nghttp2 takes some of them)
///   within the idle timeout; a stream whose client never opens its flow-control window is reset
///   (CANCEL), and what it held is freed.
/// - **After GOAWAY**: a connection told to go away is closed after a grace (the header timeout),
///   whatever its client does.
///
/// ```swift
/// var deadlines = HTTP2RequestDeadlines(headerTimeout: .seconds(10), bodyTimeout: .seconds(60), now: now)
/// deadlines.track(session.arrivingRequests, prefaceDone: session.hasReceivedFrame, now: now)
/// switch deadlines.expired(now: later) { … }
/// ```
struct HTTP2RequestDeadlines: Sendable {
    struct Arrival: Sendable, Equatable {
        var deadline: LoopInstant
        var headersComplete: Bool
        var bodyBytes: Int
        /// When its headers completed (its body began).
        var bodyStart: LoopInstant?
    }

    struct Sending: Sendable, Equatable {
        var sentBytes: Int
        var deadline: LoopInstant
    }

    /// What passed deadlines call for, most severe first.
    enum Expiry: Sendable, Equatable {
        case none
        /// Close the connection now (preface never completed, or the grace after GOAWAY is over).
        case close
        /// A header block stalled: end the connection (GOAWAY, then close).
        case endConnection
        /// These streams stalled in their request bodies or their responses: reset them.
        case resetStreams([HTTP2StreamID])
    }

    let headerTimeout: Duration
    let bodyTimeout: Duration
    /// Bytes per second a body must average after the header timeout's grace (0: no minimum).
    var minBodyRate = 0
    private(set) var arrivals: [HTTP2StreamID: Arrival] = [:]
    private(set) var sending: [HTTP2StreamID: Sending] = [:]
    private(set) var prefaceDeadline: LoopInstant?
    private(set) var closeDeadline: LoopInstant?

    init(headerTimeout: Duration, bodyTimeout: Duration, now: LoopInstant) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        prefaceDeadline = now.advanced(by: headerTimeout)
    }

    /// Follows the requests still arriving: a new stream gets the header deadline; completing its
    /// headers, or any body progress, starts the body deadline anew. Streams no longer arriving
    /// (handed out, refused, closed) are forgotten.
    mutating func track(_ arriving: [HTTP2ServerSession.ArrivingRequest], prefaceDone: Bool, now: LoopInstant) {
        if prefaceDone { prefaceDeadline = nil }
        guard !arriving.isEmpty || !arrivals.isEmpty else { return }
        var next: [HTTP2StreamID: Arrival] = [:]
        for request in arriving {
            if let known = arrivals[request.stream], known.headersComplete == request.headersComplete,
                known.bodyBytes == request.bodyBytes
            {
                next[request.stream] = known
            } else {
                let known = arrivals[request.stream]
                let arrival: Arrival
                if !request.headersComplete {
                    // The header block's deadline runs from its first frame.
                    arrival = Arrival(
                        deadline: known?.deadline ?? now.advanced(by: headerTimeout), headersComplete: false,
                        bodyBytes: request.bodyBytes)
                } else {
                    let start = known?.bodyStart ?? now
                    let timeouts = HTTP1ConnectionState.Timeouts(
                        headerRead: headerTimeout, idle: bodyTimeout, heartbeat: .zero, minBodyRate: minBodyRate)
                    arrival = Arrival(
                        deadline: timeouts.bodyDeadline(start: start, received: request.bodyBytes, now: now),
                        headersComplete: true, bodyBytes: request.bodyBytes, bodyStart: start)
                }
                next[request.stream] = arrival
            }
        }
        arrivals = next
    }

    /// Follows the responses waiting for the client's window: a stream's send deadline runs from
    /// when its bytes were first queued or last taken; streams with nothing queued are forgotten.
    mutating func trackSending(_ queued: [HTTP2ServerSession.QueuedResponse], now: LoopInstant) {
        guard !queued.isEmpty || !sending.isEmpty else { return }
        var next: [HTTP2StreamID: Sending] = [:]
        for response in queued {
            if let known = sending[response.stream], known.sentBytes == response.sentBytes {
                next[response.stream] = known
            } else {
                next[response.stream] = Sending(sentBytes: response.sentBytes, deadline: now.advanced(by: bodyTimeout))
            }
        }
        sending = next
    }

    /// The connection sent GOAWAY: it closes after the grace at the latest.
    mutating func wentAway(now: LoopInstant) {
        if closeDeadline == nil { closeDeadline = now.advanced(by: headerTimeout) }
    }

    /// The earliest deadline, if any.
    var deadline: LoopInstant? {
        ([prefaceDeadline, closeDeadline].compactMap { $0 } + arrivals.values.map(\.deadline)
            + sending.values.map(\.deadline)).min()
    }

    /// What the deadlines passed by `now` call for; reset streams are forgotten.
    mutating func expired(now: LoopInstant) -> Expiry {
        if let prefaceDeadline, prefaceDeadline <= now { return .close }
        if let closeDeadline, closeDeadline <= now { return .close }
        let late = arrivals.filter { $0.value.deadline <= now }
        if late.values.contains(where: { !$0.headersComplete }) { return .endConnection }
        let stalled = sending.filter { $0.value.deadline <= now }
        guard !late.isEmpty || !stalled.isEmpty else { return .none }
        for stream in late.keys { arrivals[stream] = nil }
        for stream in stalled.keys { sending[stream] = nil }
        return .resetStreams(Set(late.keys).union(stalled.keys).sorted())
    }
}
