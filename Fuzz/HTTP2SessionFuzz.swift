// libFuzzer entry point for the HTTP/2 server session (Sources/Transport/HTTP2 over libnghttp2): bytes from a
// client into `HTTP2ServerSession`, the engine's side played by the harness — every request
// answered, the output drained and read back as frames.
//
// Built by `Fuzz/run --target http2`: HTTPTypes (swift-http-types) and HTTP2 (with -enable-testing)
// as modules of their own, linked with the system libnghttp2 (not instrumented: coverage guides
// the fuzzer through the Swift side — the callbacks, request assembly, limits, responses).
//
// Input: one byte of options, then the client's bytes after its connection preface (the harness
// sends `PRI * HTTP/2.0…` and an empty SETTINGS frame first, so every input is past the preface).
//   bits 0–1: how the bytes arrive — in one piece, or in pieces of 1, 7 or 61 bytes
//   bit 2: streamed responses (startStream, two writes, endStream) instead of respond(to:with:body:)
//   bit 3: small limits (4 streams, 256-byte header lists, 64-byte bodies, 96 bytes buffered,
//          32 bytes pending per stream, a 16-byte initial window, a reset burst of 4)
//   bit 4: a graceful shutdown (GOAWAY) half-way through
//   bit 5: a slow socket — at most 64 bytes of output taken per piece (everything at the end)
//   bit 6: the connection starts as an h2c upgrade (stream 1 is a GET / already)
//   bit 7: requests are answered one piece later (the client may reset them meanwhile)
//
// Properties checked:
// - nothing traps, ASan finds nothing, the session and its nghttp2 memory are freed (leak check);
// - each stream delivers at most one request, on an odd id, and closes at most once, after it;
//   a request has a valid method, a scheme and a path (but CONNECT), a body within the limit and
//   as long as its content-length;
// - the bytes buffered for unfinished uploads are exactly the bodies of the undelivered streams,
//   within the limit; openStreams is the delivered, unclosed streams; nghttp2 holds < 32 MiB;
// - answering a delivered request fails only when the stream has closed;
// - the output is whole frames: the server's SETTINGS first, known types on the right kind of
//   stream, HEADERS/DATA on odd streams only, payloads within 16 KiB, one response head per
//   stream and nothing after its END_STREAM.
import Glibc
import HTTPTypes

@testable import HTTP2

/// `FUZZ_TRACE=1` (with `Fuzz/run --target http2 --reproduce FILE`) prints the events and frames.
private let tracing = getenv("FUZZ_TRACE") != nil

private func trace(_ line: @autoclosure () -> String) {
    if tracing { print(line()) }
}

private let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Session(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let options = data[0]
    var configuration = HTTP2Configuration()
    if options & 8 != 0 {
        configuration.maxConcurrentStreams = 4
        configuration.maxHeaderListSize = 256
        configuration.maxRequestBodySize = 64
        configuration.maxBufferedRequestBytes = 96
        configuration.maxPendingBytesPerStream = 32
        configuration.initialWindowSize = 16
        configuration.resetBurst = 4
        configuration.resetRatePerSecond = 1
    }
    let session: HTTP2ServerSession
    do {
        session = try HTTP2ServerSession(configuration: configuration)
    } catch {
        fatalError("session not created: \(error)")
    }
    var harness = Harness(session: session, options: options)
    if options & 64 != 0 {
        do {
            try session.upgrade(
                settingsHeader: "AAMAAABkAARAAAAAAAIAAAAA",
                request: HTTPRequest(method: .get, scheme: "http", authority: "t", path: "/"),
                body: [])
        } catch {
            fatalError("upgrade refused: \(error)")
        }
    }

    let input = preface + Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let piece = [input.count, 1, 7, 61][Int(options & 3)]
    var offset = 0
    var failed = false
    while offset < input.count && !failed {
        let end = min(input.count, offset + max(piece, 1))
        do {
            try input[offset..<end].withUnsafeBytes { try session.receive($0) }
        } catch {
            trace("receive failed: \(error)")
            failed = true  // the connection closes: what is queued still goes out
        }
        if options & 16 != 0 && offset < input.count / 2 && end >= input.count / 2 { session.beginGracefulShutdown() }
        offset = end
        harness.step(drainLimit: options & 32 != 0 ? 64 : .max, last: false)
    }
    harness.step(drainLimit: .max, last: true)
    session.terminate()
    harness.step(drainLimit: .max, last: true)
    return 0
}

private struct Harness {
    let session: HTTP2ServerSession
    let options: UInt8
    var requested: Set<Int32> = []
    var closed: Set<Int32> = []
    var headRequests: Set<Int32> = []
    /// Requests delivered in this step, and those whose answer was deferred from the last one.
    var fresh: [HTTP2StreamID] = []
    var unanswered: [HTTP2StreamID] = []
    var output = OutputFrames()

    init(session: HTTP2ServerSession, options: UInt8) {
        self.session = session
        self.options = options
    }

    mutating func step(drainLimit: Int, last: Bool) {
        takeEvents()
        // Deferred answers go out one step late: first the requests left from the step before.
        let due: [HTTP2StreamID]
        if options & 128 != 0 && !last {
            due = unanswered
            unanswered = fresh
        } else {
            due = unanswered + fresh
            unanswered = []
        }
        fresh = []
        for stream in due { answer(stream) }
        checkAccounting()

        var bytes: [UInt8] = []
        do {
            if drainLimit == .max {
                try session.drainOutput(into: &bytes)
            } else {
                try session.drainOutput(into: &bytes, limit: drainLimit)
            }
        } catch {
            // nghttp2_session_mem_send fails only on a fatal error (e.g. out of memory).
            fatalError("drainOutput failed: \(error)")
        }
        output.append(bytes)
        takeEvents()
        checkAccounting()
    }

    mutating func takeEvents() {
        for event in session.takeEvents() {
            trace("event: \(event)")
            switch event {
            case .request(let stream, let head, let body):
                let id = stream.rawValue
                if id <= 0 || id & 1 == 0 { fatalError("a request on \(stream)") }
                if !requested.insert(id).inserted { fatalError("a second request on \(stream)") }
                if closed.contains(id) { fatalError("a request on \(stream) after it closed") }
                if head.method != .connect && (head.scheme == nil || head.path == nil) {
                    fatalError("\(stream): \(head.method) without scheme or path")
                }
                if body.count > session.configuration.maxRequestBodySize { fatalError("a body of \(body.count) bytes") }
                if let length = head.headerFields[.contentLength].flatMap(Int.init), length != body.count {
                    fatalError("\(stream): content-length \(length), body \(body.count)")
                }
                if head.method == .head { headRequests.insert(id) }
                fresh.append(stream)
            case .streamClosed(let stream, _):
                let id = stream.rawValue
                if !requested.contains(id) { fatalError("\(stream) closed without a request") }
                if !closed.insert(id).inserted { fatalError("\(stream) closed twice") }
            case .goAway:
                break
            }
        }
    }

    mutating func answer(_ stream: HTTP2StreamID) {
        let body = Array("answer for stream \(stream.rawValue)\n".utf8)
        let accepted: Bool
        if options & 4 == 0 {
            accepted = session.respond(
                to: stream, with: HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain"]), body: body)
        } else {
            accepted = session.startStream(
                stream, with: HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"]))
            if accepted {
                _ = session.write(body, to: stream)
                _ = session.write(body + body, to: stream)
                // A HEAD response ends with its head: endStream has nothing left to end.
                if !session.endStream(stream) && !headRequests.contains(stream.rawValue) {
                    fatalError("endStream refused on a started \(stream)")
                }
            }
        }
        takeEvents()
        if !accepted && !closed.contains(stream.rawValue) {
            fatalError("answering \(stream) failed while it is open")
        }
    }

    func checkAccounting() {
        let buffered = session.streams.values.filter { !$0.requestDelivered }.reduce(0) { $0 + $1.body.count }
        if session.bufferedRequestBytes != buffered {
            fatalError("bufferedRequestBytes \(session.bufferedRequestBytes), the undelivered bodies hold \(buffered)")
        }
        if buffered > session.configuration.maxBufferedRequestBytes { fatalError("\(buffered) bytes buffered") }
        let open = Set(session.openStreams.map(\.rawValue))
        if open != requested.subtracting(closed) {
            fatalError(
                "openStreams \(open.sorted()), delivered and not closed \(requested.subtracting(closed).sorted())")
        }
        if session.allocatedBytes < 0 || session.allocatedBytes > 32 << 20 {
            fatalError("nghttp2 holds \(session.allocatedBytes) bytes")
        }
    }
}

/// Reads the server's output back as frames (RFC 9113 §4.1), across drains.
private struct OutputFrames {
    var pending: [UInt8] = []
    var frameCount = 0
    var headersSent: Set<UInt32> = []
    var ended: Set<UInt32> = []

    mutating func append(_ bytes: [UInt8]) {
        pending += bytes
        var offset = 0
        while pending.count - offset >= 9 {
            let length = Int(pending[offset]) << 16 | Int(pending[offset + 1]) << 8 | Int(pending[offset + 2])
            guard pending.count - offset - 9 >= length else { break }
            let type = pending[offset + 3]
            let flags = pending[offset + 4]
            let stream =
                (UInt32(pending[offset + 5]) << 24 | UInt32(pending[offset + 6]) << 16 | UInt32(pending[offset + 7])
                    << 8
                    | UInt32(pending[offset + 8])) & 0x7FFF_FFFF
            check(type: type, flags: flags, stream: stream, length: length)
            offset += 9 + length
        }
        pending.removeFirst(offset)
    }

    private mutating func check(type: UInt8, flags: UInt8, stream: UInt32, length: Int) {
        defer { frameCount += 1 }
        trace("frame out: type \(type) flags \(flags) stream \(stream) length \(length)")
        if frameCount == 0 && (type != 4 || stream != 0 || flags & 1 != 0) {
            fatalError("the first frame is type \(type) on stream \(stream), not the server's SETTINGS")
        }
        if length > 16_384 { fatalError("a \(length)-byte frame of type \(type)") }
        switch type {
        case 4, 6, 7:  // SETTINGS, PING, GOAWAY
            if stream != 0 { fatalError("frame type \(type) on stream \(stream)") }
        case 8:  // WINDOW_UPDATE
            break
        case 0, 1, 9:  // DATA, HEADERS, CONTINUATION
            if stream == 0 || stream & 1 == 0 { fatalError("frame type \(type) on stream \(stream)") }
            if type != 9 && ended.contains(stream) {
                fatalError("frame type \(type) on \(stream) after its END_STREAM")
            }
            if type == 1 && !headersSent.insert(stream).inserted { fatalError("a second HEADERS on stream \(stream)") }
            if type != 9 && flags & 1 != 0 { ended.insert(stream) }
        case 3:  // RST_STREAM
            if stream == 0 { fatalError("RST_STREAM on stream 0") }
        default:
            fatalError("the server sent frame type \(type)")
        }
    }
}
