import HTTP2
import HTTPTypes
import SocketLoop
import Synchronization

extension HTTP2ConnectionHandler {
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64) {
        guard let session, let request = active.removeValue(forKey: requestID) else { return }
        var response = response
        ResponseFinalizer.finalize(&response, for: request.request, core: core, date: date)
        let status = response.head.status.code
        if (100...199).contains(status) || status == 204 || status == 304 { response.body = [] }
        session.respond(to: request.stream, with: response.head, body: response.body)
        flush()
    }

    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool {
        guard let session, let request = active[requestID] else { return false }
        var head = head
        ResponseFinalizer.finalizeStreamHead(&head, for: request.request, core: core, date: date)
        if request.request.method == .head {
            deliver(HTTPServerResponse(status: head.status, headerFields: head.headerFields), for: requestID)
            return false
        }
        let compressor = ResponseCompression.negotiateEventStream(&head, for: request.request)
        guard session.startStream(request.stream, with: head) else { return false }
        let sink = HTTP2EventStreamSink(handler: self, streamID: request.stream, stream: stream, compressor: compressor)
        sinks[request.stream] = sink
        stream.attach(sink)
        core.stats.openStreams.add(1, ordering: .relaxed)
        updateDeadline()
        flush()
        return true
    }
}
