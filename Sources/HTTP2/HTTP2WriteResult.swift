/// What happened to bytes passed to ``HTTP2ServerSession/write(_:to:)``.
///
/// ```swift
/// if session.write(event, to: stream) == .overflow { session.reset(stream); dropSubscriber() }
/// ```
public enum HTTP2WriteResult: Sendable, Equatable {
    /// Queued; nghttp2 sends it as flow control allows (call `drainOutput`).
    case accepted
    /// Not queued: the stream already holds ``HTTP2Configuration/maxPendingBytesPerStream``
    /// bytes the client has not taken. The client is too slow; drop or reset the stream.
    case overflow
    /// Not queued: the stream is closed, was never started, or its end was already written.
    case streamNotWritable
}
