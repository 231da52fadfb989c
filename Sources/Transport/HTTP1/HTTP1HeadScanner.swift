/// Walks the bytes of a request head once, enforcing syntax and size limits as it goes.
struct HTTP1HeadScanner {
    typealias Syntax = HTTP1Syntax

    let buffer: UnsafeRawBufferPointer
    let limits: HTTP1ParserLimits
    var index = 0
    private var headStart = 0

    init(buffer: UnsafeRawBufferPointer, limits: HTTP1ParserLimits) {
        self.buffer = buffer
        self.limits = limits
    }

    struct RequestLine {
        var method: String
        var target: String
        var version: HTTP1Version
    }

    /// Out of bytes: incomplete, unless the head is already longer than allowed.
    private func needMore() -> HTTP1ScanStop {
        buffer.count - headStart > limits.maxHeaderBytes ? .invalid(.headersTooLarge) : .incomplete
    }

    private func byte(at position: Int) throws(HTTP1ScanStop) -> UInt8 {
        guard position < buffer.count else { throw needMore() }
        return buffer[position]
    }

    /// Consumes a CRLF at `index`; a lone CR or LF is an error (bare CR/LF smuggling vector).
    private mutating func expectLineEnd(_ context: String) throws(HTTP1ScanStop) {
        let first = try byte(at: index)
        if first == Syntax.lf { throw .invalid(.bad("bare LF in \(context)")) }
        guard first == Syntax.cr else { throw .invalid(.bad("malformed \(context)")) }
        guard try byte(at: index + 1) == Syntax.lf else { throw .invalid(.bad("bare CR in \(context)")) }
        index += 2
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: buffer[range]), as: UTF8.self)
    }

    mutating func scanRequestLine() throws(HTTP1ScanStop) -> RequestLine {
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while index < buffer.count, buffer[index] == Syntax.cr || buffer[index] == Syntax.lf {
            try expectLineEnd("empty line before request line")
            if index > limits.maxHeaderBytes { throw .invalid(.headersTooLarge) }
        }
        headStart = index

        let methodStart = index
        while try byte(at: index) != Syntax.space {
            guard Syntax.isTokenChar(buffer[index]) else { throw .invalid(.bad("invalid character in method")) }
            index += 1
        }
        guard index > methodStart else { throw .invalid(.bad("empty method")) }
        let method = string(methodStart..<index)
        index += 1

        let targetStart = index
        while true {
            guard index < buffer.count else {
                throw index - targetStart > limits.maxTargetBytes ? .invalid(.targetTooLong) : needMore()
            }
            let current = buffer[index]
            if current == Syntax.space { break }
            guard Syntax.isTargetChar(current) else {
                let missing = current == Syntax.cr || current == Syntax.lf
                throw .invalid(.bad(missing ? "missing HTTP version" : "invalid character in request target"))
            }
            index += 1
        }
        guard index - targetStart <= limits.maxTargetBytes else { throw .invalid(.targetTooLong) }
        guard index > targetStart else { throw .invalid(.bad("empty request target")) }
        guard Syntax.isValidTargetForm(buffer[targetStart..<index], method: method) else {
            throw .invalid(.bad("request target must be /path, scheme://authority/path, host:port (CONNECT) or *"))
        }
        let target = string(targetStart..<index)
        index += 1

        let version = try scanVersion()
        try expectLineEnd("request line")
        return RequestLine(method: method, target: target, version: version)
    }

    private mutating func scanVersion() throws(HTTP1ScanStop) -> HTTP1Version {
        for expected in "HTTP/".utf8 {
            guard try byte(at: index) == expected else { throw .invalid(.bad("malformed HTTP version")) }
            index += 1
        }
        let major = try byte(at: index)
        let dot = try byte(at: index + 1)
        let minor = try byte(at: index + 2)
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard digits.contains(major), dot == UInt8(ascii: "."), digits.contains(minor) else {
            throw .invalid(.bad("malformed HTTP version"))
        }
        index += 3
        guard major == UInt8(ascii: "1") else {
            throw .invalid(HTTP1ParseError(status: 505, reason: "HTTP version not supported"))
        }
        // A higher 1.x minor version is answered as the highest we implement (RFC 9110 §6.2).
        return minor == UInt8(ascii: "0") ? .http1_0 : .http1_1
    }

    mutating func scanHeaderLines() throws(HTTP1ScanStop) -> [HTTP1Header] {
        var headers: [HTTP1Header] = []
        while true {
            if index - headStart > limits.maxHeaderBytes { throw .invalid(.headersTooLarge) }
            let first = try byte(at: index)
            if first == Syntax.cr || first == Syntax.lf {
                try expectLineEnd("header section")
                return headers
            }
            if Syntax.isWhitespace(first) {
                throw .invalid(.bad(headers.isEmpty ? "whitespace before first header" : "obs-fold line folding"))
            }
            headers.append(try scanHeaderLine())
            if headers.count > limits.maxHeaderCount {
                throw .invalid(HTTP1ParseError(status: 431, reason: "too many header fields"))
            }
        }
    }

    private mutating func scanHeaderLine() throws(HTTP1ScanStop) -> HTTP1Header {
        let nameStart = index
        while true {
            let current = try byte(at: index)
            if current == Syntax.colon { break }
            guard Syntax.isTokenChar(current) else {
                throw .invalid(
                    .bad(Syntax.isWhitespace(current) ? "whitespace before colon" : "invalid character in header name"))
            }
            index += 1
        }
        guard index > nameStart else { throw .invalid(.bad("empty header name")) }
        let name = string(nameStart..<index)
        index += 1

        while index < buffer.count, Syntax.isWhitespace(buffer[index]) { index += 1 }
        let valueStart = index
        var valueEnd = index
        while true {
            let current = try byte(at: index)
            if current == Syntax.cr || current == Syntax.lf { break }
            guard Syntax.isFieldValueChar(current) else { throw .invalid(.bad("invalid character in header value")) }
            index += 1
            if !Syntax.isWhitespace(current) { valueEnd = index }
        }
        try expectLineEnd("header line")
        return HTTP1Header(name: name, value: string(valueStart..<valueEnd))
    }
}
