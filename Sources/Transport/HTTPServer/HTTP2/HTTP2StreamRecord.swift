import HTTP2
import SocketLoop

/// What the HTTP/2 handler holds for one stream, from the moment its request is complete until
/// nghttp2 reports the stream closed. Each stream is one entry of ``HTTP2StreamTable``, so closing
/// it removes one entry and gives back what it held in one place
/// (``HTTP2ConnectionHandler/release(_:)``): a waiting body's charge on the server-wide body
/// budget, and its event stream.
///
/// Not here, because they are not the handler's: the response bytes queued for the stream and the
/// unsent-bytes charge of a large body live in the session and are freed when it closes the
/// stream; the header, body and send deadlines are ``HTTP2RequestDeadlines``', rebuilt from the
/// session's lists on every wake-up (a stream still arriving has no record yet).
struct HTTP2StreamRecord {
    enum Phase {
        /// Complete but not routed yet: this connection's responses wait unsent beyond its share
        /// (``HTTP2ConnectionHandler/isBackedUp``). Its body stays charged to the server-wide
        /// body budget until it is routed or its stream closes.
        case waiting(HTTPServerRequest)
        /// Handed to the router and not answered yet; an event stream keeps its request here for
        /// as long as it is open.
        case routed(HTTPServerRequest)
        /// Answered: the response is the session's until the stream closes.
        case answered
    }

    var phase: Phase
    /// The response body is a cached shared body (a scope's state): queued, but costing this
    /// connection no memory of its own, so it does not back the connection up.
    var sendsCachedBody = false
    /// The event stream written on this stream; finished when the stream closes.
    var sink: HTTP2EventStreamSink?
    /// When to reset the stream (CANCEL) if it is still open then: an event stream ended as a
    /// slow subscriber whose client has not taken its last bytes.
    var resetDeadline: LoopInstant?

    init(phase: Phase) {
        self.phase = phase
    }
}
