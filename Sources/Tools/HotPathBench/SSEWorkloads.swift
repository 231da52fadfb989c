import Gateway
import HTTP2
import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine
import SocketLoop

/// Encoding an accepted change set as an SSE event, once per version, and the per-subscriber
/// framing: on HTTP/1.1 every subscriber is written the same shared chunk (a `ByteSlice`, no
/// copy, so no per-subscriber encode to time); on HTTP/2 each subscriber's stream gets the
/// event's bytes queued in nghttp2 and framed as DATA (timed here on an in-memory session).
enum SSEWorkloads {
    /// What the gateway does per accepted change set, through the same code: the engine's
    /// `ScopeEvent.changeset` (the model writes `{"version","fragments","removed"}`) framed by the
    /// gateway's `SSEFrame` as `event: changeset` / `id:` / `data:`, laid out once as an HTTP/1.1
    /// chunk in a shared buffer.
    static func changeSetEvent(_ applied: AppliedChangeSet) -> EncodedEvent {
        SSEFrame.frame(ScopeEvent.changeset(applied))
    }

    static func benchmarks(model: ModelWorkloads) -> [MicroBenchmark] {
        let ten = model.tenFragmentApplied
        let one = model.oneFragmentApplied
        let tenEvent = changeSetEvent(ten)
        let tenChunk = tenEvent.chunk.range.count
        let oneChunk = changeSetEvent(one).chunk.range.count
        var jsonWriter = JSONWriter(capacity: 256)
        ten.writeEvent(to: &jsonWriter)
        let tenJSON = jsonWriter.bytes
        // The generic path (HTTPTestServer's /publish, `EventBroadcaster.broadcast(_:)`): a String
        // payload split into `data:` lines.
        let generic = SSEEvent(
            id: String(ten.state.version), event: "changeset", data: String(decoding: tenJSON, as: UTF8.self))
        let h2 = HTTP2EventStreamBench(event: tenEvent)
        return [
            MicroBenchmark(
                "sse.writeEvent.10", "SSE: AppliedChangeSet.writeEvent, 10 fragments (JSON only)",
                bytesPerOp: tenJSON.count
            ) {
                var writer = JSONWriter(capacity: 256)
                ten.writeEvent(to: &writer)
                blackHole(writer.bytes)
            },
            MicroBenchmark(
                "sse.event.10", "SSE: change-set event encoded once (JSON + SSE + chunk), 10 fragments",
                bytesPerOp: tenChunk
            ) {
                blackHole(changeSetEvent(ten))
            },
            MicroBenchmark(
                "sse.event.1", "SSE: change-set event encoded once (JSON + SSE + chunk), 1 fragment",
                bytesPerOp: oneChunk
            ) {
                blackHole(changeSetEvent(one))
            },
            MicroBenchmark(
                "sse.generic.10", "SSE: SSEEvent(id:event:data:).encoded(), same 10-fragment JSON",
                bytesPerOp: generic.encoded().chunk.range.count
            ) {
                blackHole(generic.encoded())
            },
            MicroBenchmark(
                "sse.h2.data.10", "SSE per HTTP/2 subscriber: queue event + DATA frame (nghttp2)",
                bytesPerOp: tenEvent.payload.range.count
            ) {
                h2.writeOne()
            },
        ]
    }
}
