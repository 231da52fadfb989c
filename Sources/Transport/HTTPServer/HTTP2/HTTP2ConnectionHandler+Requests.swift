import HTTP2
import HTTPTypes
import SocketLoop

extension HTTP2ConnectionHandler {
    /// Acts on what the session reported: routes requests, releases closed streams.
    func processEvents() {
        guard let session else { return }
        let events = session.takeEvents()
        guard !events.isEmpty else {
            if table.hasWaiting { dispatchWaiting() }
            return updateDeadline()
        }
        // A request whose stream the client already reset in the same read (rapid reset) is not
        // worth starting: skipping it keeps an attacker from making the server work per reset.
        var resetInThisBatch: Set<HTTP2StreamID> = []
        for case .streamClosed(let stream, let code) in events where code != .noError {
            resetInThisBatch.insert(stream)
        }
        for event in events {
            switch event {
            case .request(let stream, _, _) where resetInThisBatch.contains(stream) || connection.isClosed:
                break
            case .request(let stream, let head, let body)
            where (table.hasWaiting || isBackedUp) && !Self.isRefused(head, core: core):
                // Back-pressure: this connection's earlier responses are not taken yet.
                wait(stream: stream, head: head, body: body)
            case .request(let stream, let head, let body):
                dispatch(stream: stream, head: head, body: body)
            case .streamClosed(let stream, _):
                if let record = table.remove(stream) { release(record) }
            case .goAway:
                break
            }
        }
        if table.hasWaiting { dispatchWaiting() }
        updateDeadline()
    }

    /// The request as handlers see it. The request upgraded from HTTP/1.1 (stream 1) keeps the
    /// version it arrived with.
    func makeRequest(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8]) -> HTTPServerRequest {
        var version = "HTTP/2"
        if stream == HTTP2StreamID(1), let upgradedVersion {
            version = upgradedVersion
            self.upgradedVersion = nil
        }
        return HTTPServerRequest(head: head, body: body, version: version)
    }

    /// Records a complete request as routed and hands it to the router.
    private func dispatch(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8]) {
        let request = makeRequest(stream: stream, head: head, body: body)
        if let replaced = table.insert(HTTP2StreamRecord(phase: .routed(request)), on: stream) { release(replaced) }
        route(request, on: stream)
    }

    /// Hands a request already recorded as routed to the router.
    func route(_ request: HTTPServerRequest, on stream: HTTP2StreamID) {
        core.handle(request, channel: self, requestID: Self.requestID(for: stream), connection: connection)
    }

    /// The responder's request id is the stream id: a connection never reuses a stream id, so it
    /// names one request, and an answer finds its record with one lookup.
    static func requestID(for stream: HTTP2StreamID) -> UInt64 {
        UInt64(UInt32(bitPattern: stream.rawValue))
    }

    static func stream(for requestID: UInt64) -> HTTP2StreamID {
        HTTP2StreamID(Int32(truncatingIfNeeded: requestID))
    }
}
