/// What a session reports and accepts so its owner can bound what one connection holds: the
/// responses waiting for the client's flow-control window (a stream at a zero window makes no
/// progress and is the owner's to reset), the bytes they hold, request bodies charged to a
/// server-wide budget, and bodies refused from their request's head.
extension HTTP2ServerSession {
    /// A response with bytes queued that nghttp2 has not taken yet (the client's window is
    /// closed, or nothing was sent since they were queued).
    public struct QueuedResponse: Sendable, Equatable {
        public let stream: HTTP2StreamID
        /// Bytes of this response handed to nghttp2 so far: it grows while the client reads.
        public let sentBytes: Int
        /// Bytes still queued.
        public let queuedBytes: Int

        public init(stream: HTTP2StreamID, sentBytes: Int, queuedBytes: Int) {
            self.stream = stream
            self.sentBytes = sentBytes
            self.queuedBytes = queuedBytes
        }
    }

    /// Every stream with response bytes queued, for a send deadline: a stream whose
    /// ``QueuedResponse/sentBytes`` stops growing is stuck at a zero window.
    ///
    /// ```swift
    /// for queued in session.queuedResponses where stalledSince(queued) > timeout { session.reset(queued.stream) }
    /// ```
    public var queuedResponses: [QueuedResponse] {
        sendingStreams.compactMap { id in
            guard let state = streams[id], state.pendingCount > 0 else { return nil }
            return QueuedResponse(stream: state.id, sentBytes: state.sentCount, queuedBytes: state.pendingCount)
        }
    }

    /// Notes that `state` has bytes queued (after an enqueue).
    func didQueue(_ state: HTTP2StreamState, bytes: Int) {
        queuedResponseBytes += bytes
        sendingStreams.insert(state.id.rawValue)
    }

    /// Notes that `count` queued bytes of `state` were taken or dropped.
    func didUnqueue(_ state: HTTP2StreamState, bytes: Int) {
        queuedResponseBytes -= bytes
        if state.pendingCount == 0 { sendingStreams.remove(state.id.rawValue) }
    }

    /// Returns `count` request-body bytes to the connection's bound and to ``bodyBudget``.
    func releaseBufferedBody(_ count: Int) {
        guard count > 0 else { return }
        bufferedRequestBytes -= count
        bodyBudget?.releaseBodyBytes(count)
    }
}

/// A buffer a response body shares by reference — a cached encoding written to many streams, or
/// a per-request body charged to a budget until it is freed. A stream queues it without a copy.
///
/// ```swift
/// final class Cached: HTTP2SharedBody {
///     let bytes: [UInt8]
///     var count: Int { bytes.count }
///     func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
///         try bytes.withUnsafeBytes(body)
///     }
/// }
/// session.respond(to: stream, with: HTTPResponse(status: .ok), sharedBody: cached)
/// ```
public protocol HTTP2SharedBody: AnyObject, Sendable {
    /// The number of bytes.
    var count: Int { get }
    /// Read access to the bytes; they must not change while any stream holds the buffer.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
}

/// A server-wide bound on request-body bytes held while bodies arrive, shared by every connection
/// (and by HTTP/1.1). The session reserves each DATA payload before buffering it; a request whose
/// bytes do not fit is answered 503. Bytes are released when the body is handed out in a
/// ``HTTP2Event/request(_:_:body:)`` event, refused, or its stream closes.
///
/// ```swift
/// session.bodyBudget = serverWideBudget
/// ```
public protocol HTTP2BodyBudget: AnyObject, Sendable {
    /// Takes `count` bytes; false (nothing taken) when they do not fit.
    func reserveBodyBytes(_ count: Int) -> Bool
    /// Returns bytes taken by ``reserveBodyBytes(_:)``.
    func releaseBodyBytes(_ count: Int)
}
