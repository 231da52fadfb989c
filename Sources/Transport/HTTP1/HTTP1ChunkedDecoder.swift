/// Decodes a `Transfer-Encoding: chunked` request body incrementally (RFC 9112 §7.1): feed it
/// bytes as they arrive; it appends the decoded data and says when the body (with any trailer
/// section, which is validated and dropped) is complete.
///
/// Chunk sizes must be 1–16 hex digits, optionally followed by `;extensions`; every line must end
/// in CRLF. Anything else is invalid (400); a body larger than the limit is 413.
///
/// ```swift
/// var decoder = HTTP1ChunkedDecoder(maxBodyBytes: 1 << 20)
/// var body: [UInt8] = []
/// if case .complete(let consumed) = decoder.decode(Array("3\r\nabc\r\n0\r\n\r\n".utf8), into: &body) {
///     print(String(decoding: body, as: UTF8.self), consumed)  // abc 15
/// }
/// ```
public struct HTTP1ChunkedDecoder: Sendable {
    /// What one call to `decode` found.
    public enum Result: Sendable, Hashable {
        /// All input was consumed; the body continues.
        case needMore
        /// The body ended after `consumed` bytes of this input; later bytes belong to the next request.
        case complete(consumed: Int)
        /// The encoding is invalid or over a limit: answer `status` and close.
        case invalid(HTTP1ParseError)
    }

    private enum State: Sendable {
        case size, sizeWhitespace, chunkExtension, sizeLineFeed, data, dataCarriageReturn, dataLineFeed
        case trailerStart, trailerLine, trailerLineFeed, finalLineFeed, done
    }

    private static let maxExtensionBytes = 4096

    /// The largest decoded body accepted.
    public let maxBodyBytes: Int
    /// The largest trailer section accepted.
    public let maxTrailerBytes: Int
    /// Decoded body bytes so far.
    public private(set) var bodyBytes = 0

    private var state = State.size
    private var chunkSize = 0
    private var sizeDigits = 0
    private var remaining = 0
    private var sideBytes = 0
    /// In a trailer field line, before its colon.
    private var inTrailerName = false

    public init(maxBodyBytes: Int, maxTrailerBytes: Int = 16 * 1024) {
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    public mutating func decode(_ input: [UInt8], into body: inout [UInt8]) -> Result {
        input.withUnsafeBytes { decode($0, into: &body) }
    }

    public mutating func decode(_ input: UnsafeRawBufferPointer, into body: inout [UInt8]) -> Result {
        var index = 0
        while index < input.count {
            if state == .data {
                let take = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<index + take]))
                index += take
                remaining -= take
                bodyBytes += take
                if remaining == 0 { state = .dataCarriageReturn }
                continue
            }
            if let error = step(input[index]) { return .invalid(error) }
            index += 1
            if state == .done { return .complete(consumed: index) }
        }
        return .needMore
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// Advances over one framing byte; returns an error when the byte cannot appear here.
    private mutating func step(_ byte: UInt8) -> HTTP1ParseError? {
        let cr = HTTP1Syntax.cr
        let lf = HTTP1Syntax.lf
        switch state {
        case .size:
            if let digit = Self.hexValue(byte) {
                sizeDigits += 1
                guard sizeDigits <= 16 else { return .bad("chunk size too long") }
                chunkSize = chunkSize * 16 + digit
                if chunkSize > maxBodyBytes - bodyBytes {
                    return HTTP1ParseError(status: 413, reason: "request body too large")
                }
                return nil
            }
            guard sizeDigits > 0 else { return .bad("invalid chunk size") }
            switch byte {
            case UInt8(ascii: ";"): state = .chunkExtension
            case HTTP1Syntax.space, HTTP1Syntax.tab: state = .sizeWhitespace
            case cr: state = .sizeLineFeed
            default: return .bad(byte == lf ? "bare LF in chunk size line" : "invalid chunk size")
            }
        case .sizeWhitespace:
            switch byte {
            case HTTP1Syntax.space, HTTP1Syntax.tab: break
            case UInt8(ascii: ";"): state = .chunkExtension
            default: return .bad("invalid chunk size")
            }
        case .chunkExtension:
            sideBytes += 1
            guard sideBytes <= Self.maxExtensionBytes else { return .bad("chunk extension too long") }
            if byte == cr {
                state = .sizeLineFeed
            } else if byte == lf {
                return .bad("bare LF in chunk extension")
            } else if !HTTP1Syntax.isFieldValueChar(byte) {
                return .bad("invalid character in chunk extension")
            }
        case .sizeLineFeed:
            guard byte == lf else { return .bad("bare CR in chunk size line") }
            sideBytes = 0
            if chunkSize == 0 {
                state = .trailerStart
            } else {
                remaining = chunkSize
                state = .data
            }
        case .data:
            preconditionFailure("data bytes are copied in bulk by decode(_:into:)")
        case .dataCarriageReturn:
            guard byte == cr else { return .bad("missing CRLF after chunk data") }
            state = .dataLineFeed
        case .dataLineFeed:
            guard byte == lf else { return .bad("missing CRLF after chunk data") }
            chunkSize = 0
            sizeDigits = 0
            state = .size
        case .trailerStart:
            if byte == cr {
                state = .finalLineFeed
            } else if byte == lf || HTTP1Syntax.isWhitespace(byte) {
                return .bad(byte == lf ? "bare LF in trailer section" : "obs-fold in trailer section")
            } else if !HTTP1Syntax.isTokenChar(byte) {
                return .bad("invalid character in trailer field name")
            } else {
                state = .trailerLine
                inTrailerName = true
                return countTrailerByte(byte)
            }
        case .trailerLine:
            if byte == cr {
                if inTrailerName { return .bad("trailer field line without a colon") }
                state = .trailerLineFeed
            } else if byte == lf {
                return .bad("bare LF in trailer section")
            } else if inTrailerName {
                if byte == UInt8(ascii: ":") {
                    inTrailerName = false
                } else if !HTTP1Syntax.isTokenChar(byte) {
                    return .bad("invalid character in trailer field name")
                }
                return countTrailerByte(byte)
            } else {
                return countTrailerByte(byte)
            }
        case .trailerLineFeed:
            guard byte == lf else { return .bad("bare CR in trailer section") }
            state = .trailerStart
        case .finalLineFeed:
            guard byte == lf else { return .bad("bare CR after last chunk") }
            state = .done
        case .done:
            break
        }
        return nil
    }

    private mutating func countTrailerByte(_ byte: UInt8) -> HTTP1ParseError? {
        guard HTTP1Syntax.isFieldValueChar(byte) else { return .bad("invalid character in trailer section") }
        sideBytes += 1
        return sideBytes > maxTrailerBytes ? HTTP1ParseError(status: 431, reason: "trailer section too large") : nil
    }
}
