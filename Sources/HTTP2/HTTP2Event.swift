public import HTTPTypes

/// Something the peer did that the server must act on, in the order it happened.
///
/// ```swift
/// for event in session.takeEvents() {
///     switch event {
///     case .request(let stream, let head, let body): route(head, body, stream)
///     case .streamClosed(let stream, _): unsubscribe(stream)
///     case .goAway: stopOpeningWork()
///     }
/// }
/// ```
public enum HTTP2Event: Sendable, Equatable {
    /// A complete request: head from the pseudo-headers and fields, and the whole body.
    case request(HTTP2StreamID, HTTPRequest, body: [UInt8])
    /// A stream ended (response sent, reset by either side, or the connection ended).
    /// Sent exactly once for every stream that produced a ``request(_:_:body:)``.
    case streamClosed(HTTP2StreamID, errorCode: HTTP2ErrorCode)
    /// The client sent GOAWAY: it opens no more streams after `lastStreamID`.
    case goAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode)
}
