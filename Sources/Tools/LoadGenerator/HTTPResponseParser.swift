/// An incremental HTTP/1.1 response parser for a client: feed it whatever `read` returned, in any
/// split, and it reports the head, the body bytes (de-chunked, as slices of the input) and the end
/// of each response. Pipelined responses follow one another on the same parser.
///
/// ```swift
/// var parser = HTTPResponseParser()
/// try parser.consume(bytes) { event in
///     switch event {
///     case .head(let head): print(head.status)
///     case .body(let chunk): count += chunk.count
///     case .end: print("done")
///     }
/// }
/// ```
///
/// Bodies are framed by `Transfer-Encoding: chunked`, `Content-Length`, or (neither) the end of
/// the connection; 1xx, 204 and 304 responses have none. The head is bounded by `maxHeadBytes`;
/// a body is not bounded, because an event stream never ends.
public struct HTTPResponseParser: Sendable {
    /// What the parser found in the bytes just consumed.
    public enum Event {
        case head(HTTPResponseHead)
        /// De-chunked body bytes; valid only during the callback.
        case body(UnsafeRawBufferPointer)
        case end
    }

    enum State: Sendable {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd(seenCR: Bool)
        case trailers
        case untilClose
    }

    public let maxHeadBytes: Int
    var state = State.head
    /// The head (or a chunk-size / trailer line) accumulated across reads.
    var line: [UInt8] = []

    public init(maxHeadBytes: Int = 64 * 1024) {
        self.maxHeadBytes = maxHeadBytes
    }

    /// True between responses (nothing of the next response seen yet).
    public var isIdle: Bool {
        if case .head = state { return line.isEmpty }
        return false
    }

    /// Consumes `bytes` in order and reports every event they complete.
    public mutating func consume(
        _ bytes: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void
    ) throws {
        var index = 0
        while index < bytes.count {
            switch state {
            case .head:
                index = try consumeHead(bytes, from: index, handle)
            case .fixedBody(let remaining):
                let take = min(remaining, bytes.count - index)
                try handle(.body(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])))
                index += take
                if take == remaining {
                    state = .head
                    try handle(.end)
                } else {
                    state = .fixedBody(remaining: remaining - take)
                }
            case .chunkSize, .trailers:
                index = try consumeLine(bytes, from: index, handle)
            case .chunkData(let remaining):
                let take = min(remaining, bytes.count - index)
                try handle(.body(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])))
                index += take
                state = take == remaining ? .chunkDataEnd(seenCR: false) : .chunkData(remaining: remaining - take)
            case .chunkDataEnd(let seenCR):
                let byte = bytes[index]
                index += 1
                if !seenCR && byte == UInt8(ascii: "\r") {
                    state = .chunkDataEnd(seenCR: true)
                } else if byte == UInt8(ascii: "\n") {
                    state = .chunkSize
                } else {
                    throw HTTPResponseParserError.missingChunkTerminator
                }
            case .untilClose:
                try handle(.body(UnsafeRawBufferPointer(rebasing: bytes[index...])))
                index = bytes.count
            }
        }
    }

    /// The peer closed the connection: ends a close-delimited body (one with neither
    /// Content-Length nor chunked framing, such as an event stream through some proxies).
    public mutating func finish(_ handle: (Event) throws -> Void) rethrows {
        if case .untilClose = state {
            state = .head
            try handle(.end)
        }
    }
}

/// Why a response could not be parsed; the load generator counts these as transport errors.
public enum HTTPResponseParserError: Error, Sendable, Hashable, CustomStringConvertible {
    case headTooLarge(limit: Int)
    case malformedStatusLine(String)
    case malformedHeader(String)
    case invalidContentLength(String)
    case invalidChunkSize
    case missingChunkTerminator

    public var description: String {
        switch self {
        case .headTooLarge(let limit): "response head larger than \(limit) bytes"
        case .malformedStatusLine(let line): "malformed status line: \(line.debugDescription)"
        case .malformedHeader(let line): "malformed header line: \(line.debugDescription)"
        case .invalidContentLength(let value): "invalid Content-Length: \(value.debugDescription)"
        case .invalidChunkSize: "invalid chunk size line in a chunked body"
        case .missingChunkTerminator: "chunk data not followed by CRLF"
        }
    }
}
