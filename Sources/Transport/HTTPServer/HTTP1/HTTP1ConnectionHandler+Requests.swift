import HTTP1
import HTTP2
import HTTPTypes
import SocketLoop

extension HTTP1ConnectionHandler {
    private static let http2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Parses and dispatches as many buffered requests as the current state allows.
    func processInput() {
        guard !isProcessing else { return }
        isProcessing = true
        defer {
            isProcessing = false
            compactInput()
            // Pipelined requests wait while one is answered or output is blocked: bound them.
            if input.count > maxBufferedInput { connection.pauseReading() }
        }
        while !connection.isClosed, !isWaitingForDrain {
            switch state.phase {
            case .idle, .readingHead:
                guard input.count > inputStart else { return }
                if isFirstRequest, core.http2 != nil, let decided = switchToHTTP2IfPreface(), !decided {
                    // A connection preface still arriving is timed like a request head.
                    state.headStarted(now: now)
                    syncDeadline()
                    return
                }
                if connection.isClosed || connection.handler !== self { return }
                guard parseHead() else { return }
            case .readingBody:
                guard readBody() else { return }
            case .responding, .streaming, .closed:
                return
            }
        }
    }

    private func compactInput() {
        guard inputStart > 0 else { return }
        if inputStart == input.count {
            input.removeAll(keepingCapacity: input.capacity <= 64 * 1024)
        } else {
            input.removeFirst(inputStart)
        }
        inputStart = 0
    }

    /// Returns nil when the input is not the HTTP/2 preface, false while it might still become it,
    /// true after handing the connection to HTTP/2.
    private func switchToHTTP2IfPreface() -> Bool? {
        let available = input.count - inputStart
        let compared = min(available, Self.http2Preface.count)
        guard input[inputStart..<inputStart + compared].elementsEqual(Self.http2Preface[0..<compared]) else {
            return nil
        }
        guard available >= Self.http2Preface.count, let factory = core.http2 else { return false }
        let handler = factory.makePriorKnowledgeHandler(connection: connection, core: core)
        let rest = Array(input[inputStart...])
        input = []
        inputStart = 0
        state.close()
        connection.replaceHandler(with: handler, replaying: rest)
        return true
    }

    /// Parses one head; returns whether to continue processing.
    private func parseHead() -> Bool {
        state.headStarted(now: now)
        let limits = core.parserLimits
        let start = inputStart
        let scanned = headBytesScanned
        let result = input.withUnsafeBytes {
            HTTP1RequestParser.parse(
                UnsafeRawBufferPointer(rebasing: $0[start...]), limits: limits, previouslyScanned: scanned)
        }
        switch result {
        case .incomplete:
            headBytesScanned = input.count - inputStart
            syncDeadline()
            return false
        case .invalid(let error):
            headBytesScanned = 0
            reject(error)
            return false
        case .complete(let head, let consumed):
            headBytesScanned = 0
            inputStart += consumed
            return beginRequest(head)
        }
    }

    private func beginRequest(_ head: HTTP1RequestHead) -> Bool {
        isFirstRequest = false
        requestID &+= 1
        var request = CurrentRequest(
            head: head, keepAlive: head.keepAlive && !state.isQuiescing, isHead: head.method == "HEAD")
        switch head.framing {
        case .contentLength(let length) where length > core.configuration.maxBodyBytes:
            reject(HTTP1ParseError(status: 413, reason: "request body too large"))
            return false
        case .contentLength(let length) where length > 0:
            request.remainingLength = length
        case .chunked:
            request.decoder = HTTP1ChunkedDecoder(
                maxBodyBytes: core.configuration.maxBodyBytes, maxTrailerBytes: core.configuration.maxHeaderBytes)
        case .contentLength, .none:
            current = request
            state.headComplete(now: now, expectsBody: false)
            syncDeadline()
            dispatch()
            return true
        }
        guard let admitted = admittedBeforeBody(request) else { return false }
        current = admitted
        state.headComplete(now: now, expectsBody: true)
        syncDeadline()
        if head.expectsContinue, input.count == inputStart {
            connection.write(ByteSlice(Self.continueBytes))
        }
        return true
    }

    /// A body is read only once it is wanted: an unknown route or method, or a route's own refusal
    /// (``BodyAdmission``), is answered from the head alone — no `100 Continue`, the body never
    /// read — and the connection closes after the answer (the unread body cannot be skipped safely).
    /// A request that may succeed keeps its parsed head and route for when its body is in: it is
    /// returned, nil when it was answered.
    private func admittedBeforeBody(_ request: consuming CurrentRequest) -> CurrentRequest? {
        let keepAlive = request.keepAlive
        let preview = serverRequest(for: request.head, body: [])
        // The current request while the route decides, as a refusal would answer it: closing.
        // Moved there and taken back, not copied (a copy retains every part of the request).
        request.keepAlive = false
        request.request = preview
        current = request
        state.headComplete(now: now, expectsBody: false)
        guard let match = core.answerBeforeBody(preview, channel: self, requestID: requestID, connection: connection),
            var admitted = current.take()
        else {
            syncDeadline()
            return nil
        }
        admitted.keepAlive = keepAlive
        admitted.match = match
        return admitted
    }

    private func serverRequest(for head: HTTP1RequestHead, body: [UInt8]) -> HTTPServerRequest {
        var parsed: [HTTPField] = []
        parsed.reserveCapacity(head.headers.count)
        for header in head.headers {
            if let name = HTTPField.Name(header.name) { parsed.append(HTTPField(name: name, value: header.value)) }
        }
        // Added at once: one field at a time goes through `HTTPFields`' generic insertion each.
        var fields = HTTPFields()
        fields.append(contentsOf: parsed)
        let method = HTTPRequest.Method(head.method) ?? .get
        let authority = head.headers.first { $0.hasName("host") }?.value
        return HTTPServerRequest(
            head: HTTPRequest(
                method: method, scheme: nil, authority: authority, path: head.target, headerFields: fields),
            body: body, version: head.version.description)
    }

    private static let continueBytes = SharedBytes(HTTP1ResponseEncoder.continueResponse)

    /// Moves buffered body bytes into the request; returns true once the body is complete.
    private func readBody() -> Bool {
        // Taken out (not copied) so appending to its body does not copy the body held by `current`.
        guard var request = current.take() else { return false }
        let available = input.count - inputStart
        if var decoder = request.decoder {
            let start = inputStart
            let result = input.withUnsafeBytes {
                decoder.decode(UnsafeRawBufferPointer(rebasing: $0[start...]), into: &request.body)
            }
            request.decoder = decoder
            guard chargeBody(count: request.body.count) else { return false }
            switch result {
            case .needMore:
                inputStart = input.count
                current = request
                state.bodyProgressed(now: now, received: request.body.count)
                syncDeadline()
                return false
            case .invalid(let error):
                reject(error)
                return false
            case .complete(let consumed):
                inputStart += consumed
            }
        } else {
            let take = min(available, request.remainingLength)
            request.body.append(contentsOf: input[inputStart..<inputStart + take])
            inputStart += take
            request.remainingLength -= take
            guard chargeBody(count: request.body.count) else { return false }
            if request.remainingLength > 0 {
                current = request
                state.bodyProgressed(now: now, received: request.body.count)
                syncDeadline()
                return false
            }
        }
        current = request
        state.bodyComplete()
        syncDeadline()
        dispatch()
        return true
    }

    /// Charges the body bytes buffered so far to the server-wide budget
    /// (``HTTPServerConfiguration/maxBufferedBodyBytes``); false after refusing the request with
    /// 503 when the budget is spent — many connections sending bodies at once cannot grow the
    /// server without bound.
    private func chargeBody(count: Int) -> Bool {
        let grown = count - chargedBodyBytes
        guard grown > 0 else { return true }
        guard core.reserveBodyBytes(grown) else {
            releaseBodyCharge()
            reject(HTTP1ParseError(status: 503, reason: "too many request bodies are being received; retry shortly"))
            return false
        }
        chargedBodyBytes += grown
        return true
    }

    /// Returns this connection's share of the body budget (the body was handed out, or dropped).
    func releaseBodyCharge() {
        guard chargedBodyBytes > 0 else { return }
        core.releaseBodyBytes(chargedBodyBytes)
        chargedBodyBytes = 0
    }

    /// Hands the complete current request to the router (or to HTTP/2 on `Upgrade: h2c`).
    private func dispatch() {
        releaseBodyCharge()
        // Taken out and put back: a copy would retain every part of the request once more.
        guard var pending = current.take() else { return }
        // Parsed and routed before the body when it has one (`admittedBeforeBody`); the body moves
        // into it (the request's own body is empty), and the route is read before `pending` is
        // put back, which a later read would copy whole.
        var request = pending.request.take() ?? serverRequest(for: pending.head, body: [])
        swap(&request.body, &pending.body)
        let match = pending.match
        pending.request = request
        current = pending
        if core.http2 != nil, upgradeToHTTP2(request) { return }
        core.handle(request, channel: self, requestID: requestID, connection: connection, match: match)
    }

    private func upgradeToHTTP2(_ request: HTTPServerRequest) -> Bool {
        guard let factory = core.http2,
            let upgrade = request.headerFields[.upgrade],
            upgrade.lowercased().split(separator: ",").contains(where: { $0.trimmingSpaces == "h2c" }),
            let settingsName = HTTPField.Name("HTTP2-Settings"),
            let settings = request.headerFields[settingsName]
        else { return false }
        if let problem = HTTP2UpgradeSettings.problem(in: settings) {
            // Refused before switching protocols, in HTTP/1.1 (the client is still speaking it).
            current = nil
            reject(HTTP1ParseError(status: 400, reason: problem))
            return true
        }
        guard
            let handler = factory.makeUpgradeHandler(
                connection: connection, request: request, settings: settings, core: core)
        else { return false }
        let rest = Array(input[inputStart...])
        input = []
        inputStart = 0
        current = nil
        state.close()
        connection.replaceHandler(with: handler, replaying: rest)
        return true
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while result.first == " " || result.first == "\t" { result.removeFirst() }
        while result.last == " " || result.last == "\t" { result.removeLast() }
        return result
    }
}
