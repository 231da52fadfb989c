/// Encodes HTTP/1.1 response heads and chunked framing (RFC 9112 §4, §7.1).
///
/// ```swift
/// var bytes: [UInt8] = []
/// HTTP1ResponseEncoder.encodeHead(
///     status: 200, reason: "OK", headers: [("Content-Length", "2")], into: &bytes)
/// bytes += Array("ok".utf8)
/// ```
public enum HTTP1ResponseEncoder {
    /// `HTTP/1.1 100 Continue`, sent before reading a body the client is waiting to send.
    public static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    /// The zero-length chunk that ends a chunked body (no trailers).
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// Appends the status line, the header lines and the empty line to `bytes`.
    /// Header names and values must already be valid (no CR or LF); `HTTPTypes` guarantees that.
    public static func encodeHead(
        status: Int, reason: String, headers: some Sequence<(String, String)>, into bytes: inout [UInt8]
    ) {
        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status, to: &bytes)
        bytes.append(HTTP1Syntax.space)
        bytes.append(contentsOf: reason.utf8)
        bytes.append(contentsOf: [HTTP1Syntax.cr, HTTP1Syntax.lf])
        for (name, value) in headers {
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: [HTTP1Syntax.colon, HTTP1Syntax.space])
            bytes.append(contentsOf: value.utf8)
            bytes.append(contentsOf: [HTTP1Syntax.cr, HTTP1Syntax.lf])
        }
        bytes.append(contentsOf: [HTTP1Syntax.cr, HTTP1Syntax.lf])
    }

    /// The line that starts a chunk of `length` bytes: hex length and CRLF.
    public static func chunkHeader(length: Int) -> [UInt8] {
        Array(String(length, radix: 16).utf8) + [HTTP1Syntax.cr, HTTP1Syntax.lf]
    }

    /// Appends a decimal number without going through `String`.
    public static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        guard value > 0 else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { storage in
            while remaining > 0 {
                storage[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(storage[index]) }
        }
    }
}

extension HTTP1ResponseEncoder {
    /// The standard reason phrase of `status` (RFC 9110 §15), or an empty string.
    public static func reasonPhrase(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }
}
