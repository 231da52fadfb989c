internal import CNGHTTP2
public import HTTPTypes

extension HTTP2ServerSession {
    /// Sends a complete response. A body without `content-length` gets one; for a HEAD request
    /// the body only sets `content-length` and is not sent.
    ///
    /// ```swift
    /// session.respond(to: stream, with: HTTPResponse(status: .notFound), body: Array("no such scope".utf8))
    /// ```
    ///
    /// - Returns: `false` when the stream is gone (the client reset it) or already has a response.
    @discardableResult
    public func respond(to stream: HTTP2StreamID, with response: HTTPResponse, body: [UInt8] = []) -> Bool {
        respond(to: stream, with: response, bodyCount: body.count) { $0.enqueue(body) }
    }

    /// Sends a complete response whose body is a buffer shared by reference (no copy is made;
    /// the stream holds it until its last byte is sent or the stream closes).
    ///
    /// ```swift
    /// session.respond(to: stream, with: HTTPResponse(status: .ok), sharedBody: cachedState)
    /// ```
    ///
    /// - Returns: `false` when the stream is gone (the client reset it) or already has a response.
    @discardableResult
    public func respond(to stream: HTTP2StreamID, with response: HTTPResponse, sharedBody: any HTTP2SharedBody) -> Bool
    {
        respond(to: stream, with: response, bodyCount: sharedBody.count) { $0.enqueue(shared: sharedBody) }
    }

    /// A complete response whose `bodyCount` bytes `enqueue` queues (not for a HEAD request).
    private func respond(
        to stream: HTTP2StreamID, with response: HTTPResponse, bodyCount: Int, enqueue: (HTTP2StreamState) -> Void
    ) -> Bool {
        guard let state = streams[stream.rawValue], state.requestDelivered || state.rejection != nil,
            !state.responseStarted
        else { return false }
        var response = response
        if bodyCount > 0 && response.headerFields[.contentLength] == nil {
            response.headerFields[.contentLength] = String(bodyCount)
        }
        let sendsBody = bodyCount > 0 && !state.isHeadRequest
        if sendsBody {
            enqueue(state)
            didQueue(state, bytes: bodyCount)
        }
        state.endWritten = true
        return submit(response, on: state, withBody: sendsBody)
    }

    /// Sends the response head of a streamed response (SSE, large or generated bodies); follow
    /// with ``write(_:to:)`` and ``endStream(_:)``. For a HEAD request the stream ends here.
    ///
    /// ```swift
    /// session.startStream(stream, with: HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"]))
    /// session.write(Array("data: hello\n\n".utf8), to: stream)
    /// ```
    ///
    /// - Returns: `false` when the stream is gone or already has a response.
    @discardableResult
    public func startStream(_ stream: HTTP2StreamID, with response: HTTPResponse) -> Bool {
        guard let state = streams[stream.rawValue], state.requestDelivered, !state.responseStarted else { return false }
        if state.isHeadRequest { state.endWritten = true }
        return submit(response, on: state, withBody: !state.isHeadRequest)
    }

    /// Queues body bytes on a started stream. nghttp2 sends them as the client's flow-control
    /// window allows; at most ``HTTP2Configuration/maxPendingBytesPerStream`` wait here (one
    /// write larger than the cap is accepted when nothing else waits, so progress is possible).
    ///
    /// - Parameter exceedingCap: queue even past the cap (a last message before ending a stream
    ///   that overflowed, such as an SSE `event: error`).
    /// - Returns: ``HTTP2WriteResult/overflow`` when the client is not keeping up (nothing was
    ///   queued; reset the stream or drop the subscriber), ``HTTP2WriteResult/streamNotWritable``
    ///   when the stream is closed or ended.
    @discardableResult
    public func write(
        _ bytes: some Collection<UInt8>, to stream: HTTP2StreamID, exceedingCap: Bool = false
    ) -> HTTP2WriteResult {
        guard let state = streams[stream.rawValue], state.responseStarted, !state.endWritten else {
            return .streamNotWritable
        }
        if !exceedingCap, state.pendingCount > 0,
            state.pendingCount + bytes.count > configuration.maxPendingBytesPerStream
        {
            return .overflow
        }
        let count = bytes.count
        state.enqueue(bytes)
        didQueue(state, bytes: count)
        resumeIfDeferred(state)
        return .accepted
    }

    /// Ends a streamed response after the bytes already queued (END_STREAM on the last DATA).
    ///
    /// - Returns: `false` when the stream is gone, was not started, or already ended.
    @discardableResult
    public func endStream(_ stream: HTTP2StreamID) -> Bool {
        guard let state = streams[stream.rawValue], state.responseStarted, !state.endWritten else { return false }
        state.endWritten = true
        resumeIfDeferred(state)
        return true
    }

    /// Resets a stream (RST_STREAM), e.g. to drop an SSE subscriber that overflowed.
    public func reset(_ stream: HTTP2StreamID, errorCode: HTTP2ErrorCode = .cancel) {
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.rawValue, errorCode.rawValue)
    }

    func resumeIfDeferred(_ state: HTTP2StreamState) {
        guard state.isDeferred else { return }
        state.isDeferred = false
        _ = nghttp2_session_resume_data(session, state.id.rawValue)
    }

    private func submit(_ response: HTTPResponse, on state: HTTP2StreamState, withBody: Bool) -> Bool {
        state.responseStarted = true
        let block = HTTP2HeaderBlock(response: response)
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil), read_callback: HTTP2Callbacks.readResponseBody)
        let status = block.withNameValuePairs { pairs in
            if withBody {
                return nghttp2_submit_response(session, state.id.rawValue, pairs.baseAddress, pairs.count, &provider)
            }
            return nghttp2_submit_response(session, state.id.rawValue, pairs.baseAddress, pairs.count, nil)
        }
        // The client must not wait for a response nghttp2 refused (heads too large for nghttp2 are
        // only detected when sent: see `HTTP2Callbacks.onFrameNotSent`).
        if status != 0 { reset(state.id, errorCode: .internalError) }
        return status == 0
    }

    /// Copies queued response bytes for nghttp2 (the data provider's read callback).
    func readResponseBody(
        stream: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int, flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let state = streams[stream] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let count = state.dequeue(into: buffer, capacity: capacity)
        didUnqueue(state, bytes: count)
        if state.pendingCount == 0 && state.endWritten {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return count
        }
        guard count > 0 else {
            state.isDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        return count
    }
}

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
