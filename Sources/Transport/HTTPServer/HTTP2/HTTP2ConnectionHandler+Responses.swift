import HTTP2
import HTTPTypes
import SocketLoop
import Synchronization

/// ``HTTPResponseChannel``: answers and event streams go to the stream their request id names
/// (``requestID(for:)``).
extension HTTP2ConnectionHandler {
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64) {
        let stream = Self.stream(for: requestID)
        guard let session, let request = table.answer(stream) else { return }
        var response = response
        ResponseFinalizer.finalize(&response, for: request, core: core, date: date)
        let status = response.head.status.code
        if (100...199).contains(status) || status == 204 || status == 304 {
            response.body = []
            response.sharedBody = nil
        }
        let isCached = response.sharedBody != nil
        ResponseFinalizer.shareChargedBody(&response, sendsBody: request.method != .head)
        if let shared = response.sharedBody {
            // Queued by reference: the one shared copy (a cached state, or a charged large body).
            session.respond(to: stream, with: response.head, sharedBody: shared)
            if isCached { table.markCachedBody(stream) }
        } else {
            session.respond(to: stream, with: response.head, body: response.body)
        }
        flush()
    }

    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool {
        let streamID = Self.stream(for: requestID)
        guard let session, let request = table.routedRequest(on: streamID) else { return false }
        var head = head
        ResponseFinalizer.finalizeStreamHead(&head, for: request, core: core, date: date)
        if request.method == .head {
            deliver(HTTPServerResponse(status: head.status, headerFields: head.headerFields), for: requestID)
            return false
        }
        let compressor = ResponseCompression.negotiateEventStream(&head, for: request)
        guard session.startStream(streamID, with: head) else { return false }
        let sink = HTTP2EventStreamSink(handler: self, streamID: streamID, stream: stream, compressor: compressor)
        table.attach(sink, to: streamID)
        stream.attach(sink)
        core.stats.openStreams.add(1, ordering: .relaxed)
        updateDeadline()
        flush()
        return true
    }
}

extension SharedBytes: HTTP2SharedBody {}
