import HTTP2
import HTTPServer
import HTTPTypes
import SocketLoop

/// An HTTP/2 server session fed a hand-built client (preface, SETTINGS with the largest window,
/// one `GET …/events` stream) and answered with a `text/event-stream` head, so each
/// ``writeOne()`` does what `HTTP2EventStreamSink.write` and the handler's flush do for one
/// subscriber: queue the event's SSE bytes on the stream and drain the DATA frame nghttp2 makes.
final class HTTP2EventStreamBench {
    private let session: HTTP2ServerSession
    private let stream = HTTP2StreamID(1)
    private let event: EncodedEvent
    private var output: [UInt8] = []
    /// DATA payload bytes sent since the client last reopened its flow-control windows.
    private var unacknowledged = 0

    init(event: EncodedEvent) {
        self.event = event
        do {
            session = try HTTP2ServerSession()
            var client = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            // SETTINGS_INITIAL_WINDOW_SIZE (4) = 2^31 - 1, so stream windows never block.
            client += Self.frame(type: 0x4, flags: 0, stream: 0, payload: [0, 4, 0x7F, 0xFF, 0xFF, 0xFF])
            client += Self.windowUpdate(stream: 0, increment: Int(Int32.max) - 65_535)
            client += Self.frame(type: 0x1, flags: 0x5, stream: 1, payload: Self.requestHeaderBlock())
            try session.receive(client)
            guard case .request(let id, _, _) = session.takeEvents().first, id == stream else {
                fatalError("HTTP/2 bench: no request event")
            }
            _ = try session.drainOutput()
            // Acknowledge the server's SETTINGS, as a client does.
            try session.receive(Self.frame(type: 0x4, flags: 0x1, stream: 0, payload: []))
            let head = HTTPResponse(
                status: .ok, headerFields: [.contentType: "text/event-stream", .cacheControl: "no-cache"])
            guard session.startStream(stream, with: head) else { fatalError("HTTP/2 bench: stream not started") }
            _ = try session.drainOutput()
        } catch {
            fatalError("HTTP/2 bench session: \(error)")
        }
        output.reserveCapacity(64 << 10)
        // One DATA frame (9-byte header) carrying the whole event, or the bench times nothing.
        writeOne()
        guard output.count == event.payload.range.count + 9 else {
            fatalError("HTTP/2 bench: drained \(output.count) bytes for a \(event.payload.range.count)-byte event")
        }
    }

    func writeOne() {
        let bytes = event.payload
        let result = bytes.storage.withUnsafeBytes { buffer in
            session.write(UnsafeRawBufferPointer(rebasing: buffer[bytes.range]), to: stream)
        }
        guard result == .accepted else { fatalError("HTTP/2 bench: write \(result)") }
        output.removeAll(keepingCapacity: true)
        do {
            try session.drainOutput(into: &output)
            // Flow control counts DATA payload only (not the 9-byte frame headers): the client's
            // WINDOW_UPDATEs give back exactly that, once per 256 MB (negligible in the average).
            unacknowledged += bytes.range.count
            if unacknowledged > 1 << 28 {
                try session.receive(
                    Self.windowUpdate(stream: 0, increment: unacknowledged)
                        + Self.windowUpdate(stream: 1, increment: unacknowledged))
                unacknowledged = 0
            }
        } catch {
            fatalError("HTTP/2 bench drain: \(error)")
        }
        blackHole(output.count)
    }

    /// HPACK without Huffman or indexing: `:method GET`, `:scheme http` (static table), `:path`,
    /// `:authority` and `accept` as literals with indexed names.
    private static func requestHeaderBlock() -> [UInt8] {
        func literal(_ nameIndex: UInt8, _ value: String) -> [UInt8] {
            let prefix: [UInt8] = nameIndex < 15 ? [nameIndex] : [0x0F, nameIndex - 15]
            return prefix + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return [0x82, 0x86] + literal(4, "/v1/scopes/canvas-demo/events") + literal(1, "127.0.0.1")
            + literal(19, "text/event-stream")
    }

    private static func windowUpdate(stream: Int32, increment: Int) -> [UInt8] {
        frame(type: 0x8, flags: 0, stream: stream, payload: bigEndian32(UInt32(increment)))
    }

    private static func frame(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + bigEndian32(UInt32(stream)) + payload
    }

    private static func bigEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
