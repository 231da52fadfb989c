internal import CNGHTTP2
public import HTTPTypes

/// Request assembly, called from the nghttp2 callbacks in `HTTP2Callbacks`.
extension HTTP2ServerSession {
    /// A request still arriving: its stream, whether its header block is complete, and the body
    /// bytes received so far (for the caller's header and body deadlines).
    public struct ArrivingRequest: Sendable, Equatable {
        public let stream: HTTP2StreamID
        public let headersComplete: Bool
        public let bodyBytes: Int

        public init(stream: HTTP2StreamID, headersComplete: Bool, bodyBytes: Int) {
            self.stream = stream
            self.headersComplete = headersComplete
            self.bodyBytes = bodyBytes
        }
    }

    /// Every stream whose request has begun and is neither handed out nor refused yet.
    ///
    /// ```swift
    /// for arriving in session.arrivingRequests where !arriving.headersComplete { … }
    /// ```
    public var arrivingRequests: [ArrivingRequest] {
        // Kept apart from `streams`, which also holds every open response and event stream: the
        // connection asks after each event it writes.
        arrivingStreams.compactMap { id in
            guard let state = streams[id], !state.requestDelivered, state.rejection == nil else { return nil }
            return ArrivingRequest(
                stream: state.id, headersComplete: state.headersComplete, bodyBytes: state.body.count)
        }
    }

    func beginRequest(stream: Int32) {
        streams[stream] = HTTP2StreamState(id: HTTP2StreamID(stream))
        arrivingStreams.insert(stream)
    }

    /// A HEADERS frame is arriving. A client stream id must be higher than every one it used
    /// before (RFC 9113 §5.1.1): HEADERS on a lower odd id that is not an open stream (trailers
    /// are) is a connection error. nghttp2 would drop the frame silently; the client is told with
    /// GOAWAY(PROTOCOL_ERROR).
    func beginHeadersFrame(stream: Int32) {
        guard stream & 1 == 1 else { return }  // an even id: nghttp2 refuses it itself
        if stream > highestClientStream {
            highestClientStream = stream
        } else if streams[stream] == nil {
            terminate(errorCode: .protocolError)
        }
    }

    /// One decoded header field; false asks nghttp2 to stop decoding the block (it skips the
    /// rest without calling back and resets the stream).
    ///
    /// A header list over the limit is answered 431 — unless it runs far past it: HPACK lets one
    /// byte reference a large field again, so a small block can decode into megabytes, one
    /// callback per reference. Past twice the limit the block is abandoned, and a connection that
    /// does it ``oversizedHeaderBlocksBeforeGoAway`` times is cut off with GOAWAY(ENHANCE_YOUR_CALM).
    func receiveHeader(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let state = streams[stream], !state.requestDelivered, !state.headersComplete else { return true }
        state.headerListSize += name.count + value.count + 32
        if state.headerListSize > Int(configuration.maxHeaderListSize) {
            if state.rejection == nil { state.rejection = .headersTooLarge }
            state.fields = HTTPFields()
            guard state.headerListSize > 2 * Int(configuration.maxHeaderListSize) else { return true }
            oversizedHeaderBlocks += 1
            if oversizedHeaderBlocks >= Self.oversizedHeaderBlocksBeforeGoAway {
                terminate(errorCode: .enhanceYourCalm)
            }
            return false
        }
        guard state.rejection == nil else { return true }
        let nameText = String(decoding: name, as: UTF8.self)
        if nameText.hasPrefix(":") {
            let valueText = String(decoding: value, as: UTF8.self)
            switch nameText {
            case ":method": state.method = valueText
            case ":scheme": state.scheme = valueText
            case ":authority": state.authority = valueText
            case ":path": state.path = valueText
            default: state.rejection = .malformed("unsupported pseudo-header \(nameText)")
            }
            return true
        }
        guard let fieldName = HTTPField.Name(nameText) else {
            state.rejection = .malformed("invalid field name \(nameText)")
            return true
        }
        state.fields.append(HTTPField(name: fieldName, lenientValue: value))
        return true
    }

    func receiveHeadersFrame(stream: Int32, isRequestHead: Bool, endsStream: Bool) {
        guard let state = streams[stream] else { return }
        if isRequestHead {
            state.headersComplete = true
            if state.rejection == nil, let length = state.fields[.contentLength].flatMap(Int.init),
                length > configuration.maxRequestBodySize
            {
                state.rejection = .bodyTooLarge
            }
            if state.rejection != nil {
                queueRejection(state)
                return
            }
            if !endsStream, let admitsBody, let head = requestHead(of: state), !admitsBody(head) {
                // Refused from its head: handed out now without a body, whose DATA is dropped.
                completeRequest(state)
                return
            }
        }
        if endsStream { completeRequest(state) }
    }

    /// The request head assembled so far, when its method is valid.
    private func requestHead(of state: HTTP2StreamState) -> HTTPRequest? {
        guard let methodText = state.method, let method = HTTPRequest.Method(methodText) else { return nil }
        return HTTPRequest(
            method: method, scheme: state.scheme, authority: state.authority, path: state.path,
            headerFields: state.fields)
    }

    func receiveBody(stream: Int32, bytes: UnsafeBufferPointer<UInt8>) {
        guard let state = streams[stream], state.rejection == nil, !state.requestDelivered else { return }
        if state.body.count + bytes.count > configuration.maxRequestBodySize {
            state.rejection = .bodyTooLarge
        } else if bufferedRequestBytes + bytes.count > configuration.maxBufferedRequestBytes {
            state.rejection = .overBudget
        } else if let bodyBudget, !bodyBudget.reserveBodyBytes(bytes.count) {
            state.rejection = .serverBusy
        }
        if state.rejection != nil {
            queueRejection(state)
            return
        }
        state.body.append(contentsOf: bytes)
        bufferedRequestBytes += bytes.count
    }

    func receiveEndOfBody(stream: Int32) {
        guard let state = streams[stream] else { return }
        completeRequest(state)
    }

    func closeStream(_ stream: Int32, errorCode: UInt32) {
        arrivingStreams.remove(stream)
        guard let state = streams.removeValue(forKey: stream) else { return }
        if !state.requestDelivered { releaseBufferedBody(state.body.count) }
        if state.pendingCount > 0 {
            queuedResponseBytes -= state.pendingCount
            sendingStreams.remove(stream)
        }
        if state.requestDelivered {
            events.append(.streamClosed(state.id, errorCode: HTTP2ErrorCode(rawValue: errorCode)))
        }
    }

    /// After the server's END_STREAM on a stream the client is still sending on, RST_STREAM
    /// (NO_ERROR) tells it to stop (RFC 9113 §8.1), e.g. after a 413 for an oversized upload.
    func sentEndOfStream(stream: Int32) {
        guard nghttp2_session_get_stream_remote_close(session, stream) == 0 else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, NGHTTP2_NO_ERROR.rawValue)
    }

    private func completeRequest(_ state: HTTP2StreamState) {
        guard state.rejection == nil, !state.requestDelivered else { return }
        guard let request = requestHead(of: state) else {
            state.rejection = .malformed("missing or invalid :method")
            queueRejection(state)
            return
        }
        state.requestDelivered = true
        arrivingStreams.remove(state.id.rawValue)
        state.fields = HTTPFields()
        releaseBufferedBody(state.body.count)
        let body = state.body
        state.body = []
        events.append(.request(state.id, request, body: body))
    }

    private func queueRejection(_ state: HTTP2StreamState) {
        guard !state.rejectionQueued else { return }
        state.rejectionQueued = true
        releaseBufferedBody(state.body.count)
        state.body = []
        rejectedStreams.append(state)
    }

    /// Answers the streams rejected during the last `receive`, outside nghttp2's callbacks.
    func answerRejectedStreams() {
        guard !rejectedStreams.isEmpty else { return }
        for state in rejectedStreams where streams[state.id.rawValue] === state {
            let status: HTTPResponse.Status
            let message: String
            let reason: String
            switch state.rejection {
            case .headersTooLarge:
                status = .requestHeaderFieldsTooLarge
                message = "request header fields exceed \(configuration.maxHeaderListSize) bytes"
                reason = "request header section too large"
            case .bodyTooLarge:
                status = .contentTooLarge
                message = "request body exceeds \(configuration.maxRequestBodySize) bytes"
                reason = "request body too large"
            case .malformed(let detail):
                status = .badRequest
                message = "malformed request: \(detail)"
                reason = "malformed HTTP/2 request"
            case .serverBusy:
                status = .serviceUnavailable
                message = "too many request bodies are being received; retry shortly"
                reason = message
            case .overBudget, nil:
                reset(state.id, errorCode: .refusedStream)
                continue
            }
            if let renderRejection {
                let (head, body) = renderRejection(status, message, reason)
                respond(to: state.id, with: head, body: body)
            } else {
                let response = HTTPResponse(status: status, headerFields: [.contentType: "text/plain; charset=utf-8"])
                respond(to: state.id, with: response, body: Array((message + "\n").utf8))
            }
        }
        rejectedStreams.removeAll()
    }
}

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
