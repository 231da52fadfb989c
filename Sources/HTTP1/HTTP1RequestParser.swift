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
