import HTTP2
import HTTPServer
import HTTPTypes
import JetstreamModel
import SocketLoop

/// Encoding an accepted change set as an SSE event, once per version, and the per-subscriber
/// framing: on HTTP/1.1 every subscriber is written the same shared chunk (a `ByteSlice`, no
/// copy, so no per-subscriber encode to time); on HTTP/2 each subscriber's stream gets the
/// event's bytes queued in nghttp2 and framed as DATA (timed here on an in-memory session).
enum SSEWorkloads {
    /// What the gateway does per accepted change set (`ScopeEvents.changeSetPayload` and
    /// `ChangeSetPayload.event`, internal to the Gateway target, mirrored line for line so this
    /// bench does not link the gateway): the model writes `{"version","fragments","removed"}`,
    /// which is framed as `event: changeset` / `id:` / `data:` and laid out once as an HTTP/1.1
    /// chunk in a shared buffer.
    static func changeSetEvent(_ applied: AppliedChangeSet) -> EncodedEvent {
        var writer = JSONWriter(capacity: 256)
        applied.writeEvent(to: &writer)
        let json = writer.bytes
        let version = applied.state.version
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + 41)
        bytes.append(contentsOf: "event: changeset\n".utf8)
        bytes.append(contentsOf: "id: \(version)\n".utf8)
        bytes.append(contentsOf: "data: ".utf8)
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return EncodedEvent(payload: bytes)
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
