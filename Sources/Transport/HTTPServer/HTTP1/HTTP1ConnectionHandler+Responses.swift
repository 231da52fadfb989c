import HTTP1
import HTTPTypes
import SocketLoop
import Synchronization

extension HTTP1ConnectionHandler {
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64) {
        guard requestID == self.requestID, state.phase == .responding, current?.request != nil,
            // Taken, not copied: the answer ends the request (`finishResponse` below).
            let request = current.take(), let served = request.request
        else { return }
        var response = response
        ResponseFinalizer.finalize(&response, for: served, core: core, date: date)
        ResponseFinalizer.shareChargedBody(
            &response, sendsBody: Self.allowsBody(response.head.status) && !request.isHead)
        let status = response.head.status.code
        let bodyAllowed = Self.allowsBody(response.head.status)
        var head: [UInt8] = []
        head.reserveCapacity(256)
        HTTP1ResponseEncoder.encodeHead(
            status: status, reason: Self.reason(response.head.status),
            headers: headerLines(
                response.head.headerFields, keepAlive: request.keepAlive, version: request.head.version,
                contentLength: bodyAllowed ? response.bodyCount : nil),
            into: &head)
        let includeBody = bodyAllowed && !request.isHead && response.bodyCount > 0
        if let shared = response.sharedBody {
            // Written by reference: the one shared copy, not one per connection.
            connection.write(ByteSlice(SharedBytes(head)))
            if includeBody { connection.write(ByteSlice(shared)) }
        } else {
            connection.write(ByteSlice(SharedBytes(parts: includeBody ? [head, response.body] : [head])))
        }
        finishResponse(keepAlive: request.keepAlive)
    }

    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool {
        guard requestID == self.requestID, state.phase == .responding, let request = current,
            let served = request.request
        else { return false }
        var head = head
        ResponseFinalizer.finalizeStreamHead(&head, for: served, core: core, date: date)
        if request.isHead {
            deliver(HTTPServerResponse(status: head.status, headerFields: head.headerFields), for: requestID)
            return false
        }
        let compressor = ResponseCompression.negotiateEventStream(&head, for: served)
        // HTTP/1.0 has no chunked coding: the stream is delimited by closing the connection.
        let chunked = request.head.version == .http1_1
        let keepAlive = chunked && request.keepAlive
        current?.keepAlive = keepAlive
        var fields = head.headerFields
        if chunked { fields[.transferEncoding] = "chunked" }
        var bytes: [UInt8] = []
        HTTP1ResponseEncoder.encodeHead(
            status: head.status.code, reason: Self.reason(head.status),
            headers: headerLines(fields, keepAlive: keepAlive, version: request.head.version, contentLength: nil),
            into: &bytes)
        connection.write(bytes)
        state.streamOpened(now: now)
        syncDeadline()
        // Keep only what ending the stream needs: a long-lived stream should not hold the request.
        current?.request = nil
        current?.head.headers = []
        let sink = HTTP1EventStreamSink(handler: self, stream: stream, chunked: chunked, compressor: compressor)
        streamSink = sink
        stream.attach(sink)
        core.stats.openStreams.add(1, ordering: .relaxed)
        return true
    }

    /// Ends the current response; continues with pipelined requests or closes.
    func finishResponse(keepAlive: Bool) {
        current = nil
        if state.responseComplete(now: now, keepAlive: keepAlive) {
            syncDeadline()
            if connection.pendingBytes > connection.loop.maxPendingBytes / 2 {
                connection.flushNow()
                isWaitingForDrain = connection.isWriteBlocked
            }
            connection.resumeReading()
            processInput()
        } else {
            syncDeadline()
            connection.closeAfterFlush()
        }
    }

    /// After a slow subscriber's stream ended: no further request is read; the connection closes
    /// once its last bytes are written, or after the linger timeout if the peer never reads them.
    func closeAfterSlowStream() {
        state.close()
        current = nil
        syncDeadline()
        connection.closeAfterFlush(within: connection.loop.lingerTimeout)
    }

    /// Answers a request that cannot be served (bad syntax, limits, timeout) and closes.
    func reject(_ error: HTTP1ParseError) {
        state.close()
        syncDeadline()
        current = nil
        releaseBodyCharge()
        var head: [UInt8] = []
        let rendered = core.configuration.errorResponse(HTTPResponse.Status(code: error.status), error.reason)
        let body = rendered.body
        var headers = [
            ("Content-Type", rendered.head.headerFields[.contentType] ?? "text/plain; charset=utf-8"),
            ("Content-Length", String(body.count)), ("Date", date.current), ("Connection", "close"),
        ]
        // The engine answers 503 only at a bound that frees itself (the body budget): retry soon.
        if error.status == 503 { headers.append(("Retry-After", "1")) }
        HTTP1ResponseEncoder.encodeHead(
            status: error.status, reason: HTTP1ResponseEncoder.reasonPhrase(for: error.status), headers: headers,
            into: &head)
        connection.write(ByteSlice(SharedBytes(parts: [head, body])))
        connection.closeAfterFlush()
        core.recordRejection(status: error.status, reason: error.reason, bodyBytes: body.count, connection: connection)
    }

    /// Whether a response with `status` has a body (not 1xx, 204 or 304).
    static func allowsBody(_ status: HTTPResponse.Status) -> Bool {
        !(100...199).contains(status.code) && status.code != 204 && status.code != 304
    }

    static func reason(_ status: HTTPResponse.Status) -> String {
        status.reasonPhrase.isEmpty ? HTTP1ResponseEncoder.reasonPhrase(for: status.code) : status.reasonPhrase
    }

    /// The header lines to send: the response's own fields minus framing, plus our framing.
    private func headerLines(
        _ fields: HTTPFields, keepAlive: Bool, version: HTTP1Version, contentLength: Int?
    ) -> [(String, String)] {
        var lines: [(String, String)] = []
        lines.reserveCapacity(fields.count + 3)
        for field in fields where field.name != .contentLength && field.name != .connection {
            // A sized response is never chunked, whatever the handler set.
            if contentLength != nil, field.name == .transferEncoding { continue }
            lines.append((field.name.rawName, field.value))
        }
        if let contentLength { lines.append(("Content-Length", String(contentLength))) }
        if !keepAlive {
            lines.append(("Connection", "close"))
        } else if version == .http1_0 {
            lines.append(("Connection", "keep-alive"))
        }
        return lines
    }
}
