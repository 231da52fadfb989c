import HTTP2
import HTTPTypes
import SocketLoop

/// Back-pressure: a connection whose own responses wait unsent beyond its share
/// (``HTTPServerConfiguration/maxPendingBytes``) routes no new request until its client reads;
/// complete requests wait, oldest first, their bodies charged to the server-wide body budget.
extension HTTP2ConnectionHandler {
    /// Whether this connection's own responses wait unsent beyond its share
    /// (``HTTPServerConfiguration/maxPendingBytes``): new requests wait until the client reads.
    /// Cached shared bodies do not count; they cost the connection nothing.
    var isBackedUp: Bool {
        guard let session else { return false }
        var queued = session.queuedResponseBytes
        if table.cachedBodies > 0 {
            for (stream, record) in table.records where record.sendsCachedBody {
                queued -= session.pendingBytes(on: stream)
            }
        }
        return queued > core.configuration.maxPendingBytes
    }

    /// Whether a request is refused from its head alone: its body is not read, and it is
    /// answered at once, backed up or not (its answer is small).
    static func isRefused(_ head: HTTPRequest, core: ServerCore) -> Bool {
        core.refusesBeforeBody(HTTPServerRequest(head: head, body: [], version: "HTTP/2"))
    }

    /// Queues a request behind this connection's unsent responses, its body charged to the
    /// server-wide body budget; beyond the connection's bound for unfinished uploads the stream
    /// is refused (REFUSED_STREAM: the client may retry it).
    func wait(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8]) {
        let bound = session?.configuration.maxBufferedRequestBytes ?? 0
        guard table.waitingBodyBytes + body.count <= bound else {
            session?.reset(stream, errorCode: .refusedStream)
            return
        }
        core.holdBodyBytes(body.count)
        let request = makeRequest(stream: stream, head: head, body: body)
        if let replaced = table.insert(HTTP2StreamRecord(phase: .waiting(request)), on: stream) { release(replaced) }
    }

    /// Routes waiting requests, oldest first, while the connection is not backed up.
    func dispatchWaiting() {
        guard !isDispatchingWaiting else { return }
        isDispatchingWaiting = true
        defer { isDispatchingWaiting = false }
        while table.hasWaiting, !isBackedUp, !connection.isClosed, let next = table.routeOldestWaiting() {
            core.releaseBodyBytes(next.request.body.count)
            route(next.request, on: next.stream)
        }
    }
}
