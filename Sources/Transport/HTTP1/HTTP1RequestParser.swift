/// A byte-level HTTP/1.1 request head parser (RFC 9112 §2–5), in the manner of picohttpparser:
/// a pure function over the bytes received so far that says complete, incomplete or invalid.
///
/// It is strict where leniency enables request smuggling: bare CR or LF, obs-fold, whitespace
/// before the colon, duplicate or malformed `Content-Length`, `Content-Length` with
/// `Transfer-Encoding`, and a missing `Host` on HTTP/1.1 are all rejected with 400.
///
/// ```swift
/// switch HTTP1RequestParser.parse(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)) {
/// case .complete(let head, let consumed): print(head.method, head.target, consumed)
/// case .incomplete: break  // read more bytes, then parse the whole buffer again
/// case .invalid(let error): print(error.status, error.reason)  // answer and close
/// }
/// ```
public enum HTTP1RequestParser {
    /// Parses a request head from the start of `bytes`.
    public static func parse(_ bytes: [UInt8], limits: HTTP1ParserLimits = HTTP1ParserLimits()) -> HTTP1ParseResult {
        bytes.withUnsafeBytes { parse($0, limits: limits) }
    }

    /// Parses a request head that arrives in pieces without scanning it again from byte 0 on every
    /// read (picohttpparser's `last_len`): `previouslyScanned` is how many bytes of this head an
    /// earlier call already answered `.incomplete` for. Only the bytes after them (and the three
    /// before, which may start the blank line) are looked at, for the end of the head or a bare CR
    /// or LF; the whole head is parsed when one of those arrives or when the bytes exceed the head
    /// limit. A dribbled head thus costs each byte a constant, where parsing the prefix again costs
    /// the square. Pass 0 for the first piece: it is parsed at once, so garbage is refused from its
    /// first read. Other malformed bytes in a later piece are refused when the head ends or
    /// outgrows the limit (or by the header read timeout), not as they arrive.
    ///
    /// ```swift
    /// var scanned = 0
    /// switch HTTP1RequestParser.parse(buffer, limits: limits, previouslyScanned: scanned) {
    /// case .incomplete: scanned = buffer.count      // wait for more bytes
    /// case .complete, .invalid: scanned = 0         // the next head starts afresh
    /// }
    /// ```
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, limits: HTTP1ParserLimits = HTTP1ParserLimits(), previouslyScanned: Int
    ) -> HTTP1ParseResult {
        if previouslyScanned > 0, buffer.count <= limits.maxHeaderBytes,
            !needsFullParse(buffer, from: max(0, previouslyScanned - 3))
        {
            return .incomplete
        }
        return parse(buffer, limits: limits)
    }

    /// Whether the bytes from `start` on hold the end of a head (CR LF CR LF), a bare LF or a CR
    /// followed by something else: then the whole head must be parsed to answer.
    static func needsFullParse(_ buffer: UnsafeRawBufferPointer, from start: Int) -> Bool {
        let cr = HTTP1Syntax.cr
        let lf = HTTP1Syntax.lf
        var index = start
        while index < buffer.count {
            switch buffer[index] {
            case lf:
                if index == 0 || buffer[index - 1] != cr { return true }
                if index >= 3 && buffer[index - 3] == cr && buffer[index - 2] == lf { return true }
            case cr:
                if index + 1 < buffer.count && buffer[index + 1] != lf { return true }
            default:
                break
            }
            index += 1
        }
        return false
    }

    /// Parses a request head from the start of `buffer`; the buffer is only read.
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, limits: HTTP1ParserLimits = HTTP1ParserLimits()
    ) -> HTTP1ParseResult {
        var scanner = HTTP1HeadScanner(buffer: buffer, limits: limits)
        do throws(HTTP1ScanStop) {
            let line = try scanner.scanRequestLine()
            let headers = try scanner.scanHeaderLines()
            let head = try HTTP1RequestSemantics.interpret(
                method: line.method, target: line.target, version: line.version, headers: headers)
            return .complete(head, consumed: scanner.index)
        } catch {
            switch error {
            case .incomplete: return .incomplete
            case .invalid(let parseError): return .invalid(parseError)
            }
        }
    }
}

/// Why scanning stopped before a complete head.
enum HTTP1ScanStop: Error {
    case incomplete
    case invalid(HTTP1ParseError)
}

/// The outcome of ``HTTP1RequestParser/parse(_:limits:)``.
public enum HTTP1ParseResult: Sendable, Hashable {
    /// A whole request head; `consumed` bytes (including any leading empty lines) were used.
    case complete(HTTP1RequestHead, consumed: Int)
    /// Every byte so far is a valid prefix of a request head; feed more.
    case incomplete
    /// The bytes can never become a valid request head: answer `error.status` and close.
    case invalid(HTTP1ParseError)
}

/// Why a request was rejected: the status to answer with (the connection is then closed) and a
/// short reason naming what is wrong, suitable for the response body and the log.
public struct HTTP1ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The response status: 400, 413, 414, 417, 431, 501 or 505.
    public var status: Int
    /// What is wrong, for example `"bare LF in header section"`.
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status) \(reason)" }

    static func bad(_ reason: String) -> HTTP1ParseError { HTTP1ParseError(status: 400, reason: reason) }
    static let headersTooLarge = HTTP1ParseError(status: 431, reason: "request header section too large")
    static let targetTooLong = HTTP1ParseError(status: 414, reason: "request target too long")
}

/// Bounds enforced while parsing a request head.
///
/// ```swift
/// let limits = HTTP1ParserLimits(maxHeaderBytes: 8192)
/// ```
public struct HTTP1ParserLimits: Sendable, Hashable {
    /// The request line plus all header lines, in bytes (431 beyond it). Default 16 KiB.
    public var maxHeaderBytes: Int
    /// The request target, in bytes (414 beyond it). Default 8 KiB.
    public var maxTargetBytes: Int
    /// The number of header lines (431 beyond it). Default 100.
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxTargetBytes: Int = 8 * 1024, maxHeaderCount: Int = 100) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxHeaderCount = maxHeaderCount
    }
}
