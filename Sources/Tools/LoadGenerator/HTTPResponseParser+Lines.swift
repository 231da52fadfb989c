extension HTTPResponseParser {
    private static let lineFeed = UInt8(ascii: "\n")

    /// Accumulates the head until the empty line, then parses it and picks the body framing.
    mutating func consumeHead(
        _ bytes: UnsafeRawBufferPointer, from start: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            line.append(byte)
            guard byte == Self.lineFeed else { continue }
            if line.count > maxHeadBytes { throw HTTPResponseParserError.headTooLarge(limit: maxHeadBytes) }
            if line == [Self.lineFeed] || line == [UInt8(ascii: "\r"), Self.lineFeed] {
                line.removeAll(keepingCapacity: true)  // a stray empty line between responses
                continue
            }
            let count = line.count
            let endsHead =
                count >= 2 && line[count - 2] == Self.lineFeed
                || count >= 4 && line[count - 2] == UInt8(ascii: "\r") && line[count - 3] == Self.lineFeed
            guard endsHead else { continue }
            let (head, framing) = try Self.parseHead(line)
            line.removeAll(keepingCapacity: true)
            try handle(.head(head))
            try startBody(of: head, framing: framing, handle)
            return index
        }
        if line.count > maxHeadBytes { throw HTTPResponseParserError.headTooLarge(limit: maxHeadBytes) }
        return index
    }

    private mutating func startBody(
        of head: HTTPResponseHead, framing: BodyFraming, _ handle: (Event) throws -> Void
    )
        throws
    {
        if head.status < 200 || head.status == 204 || head.status == 304 {
            state = .head
            if head.status >= 200 { try handle(.end) }
            return
        }
        switch framing {
        case .chunked:
            state = .chunkSize
        case .length(0):
            state = .head
            try handle(.end)
        case .length(let count):
            state = .fixedBody(remaining: count)
        case .untilClose:
            state = .untilClose
        }
    }

    /// A chunk-size line or a trailer line.
    mutating func consumeLine(
        _ bytes: UnsafeRawBufferPointer, from start: Int, _ handle: (Event) throws -> Void
    ) throws -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte != Self.lineFeed {
                line.append(byte)
                if line.count > 4096 { throw HTTPResponseParserError.invalidChunkSize }
                continue
            }
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            defer { line.removeAll(keepingCapacity: true) }
            if case .trailers = state {
                if line.isEmpty {
                    state = .head
                    try handle(.end)
                    return index
                }
                continue
            }
            let size = try Self.chunkSize(line)
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return index
        }
        return index
    }

    static func chunkSize(_ line: [UInt8]) throws -> Int {
        var size = 0
        var digits = 0
        for byte in line {
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = Int(byte - UInt8(ascii: "A")) + 10
            case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                guard digits > 0 else { throw HTTPResponseParserError.invalidChunkSize }
                return size
            default: throw HTTPResponseParserError.invalidChunkSize
            }
            digits += 1
            guard digits <= 15 else { throw HTTPResponseParserError.invalidChunkSize }
            size = size * 16 + digit
        }
        guard digits > 0 else { throw HTTPResponseParserError.invalidChunkSize }
        return size
    }

    enum BodyFraming: Equatable {
        case chunked
        case length(Int)
        case untilClose
    }

    /// Parses the status line and finds the framing headers in bytes; the other fields stay raw.
    static func parseHead(_ bytes: [UInt8]) throws -> (HTTPResponseHead, BodyFraming) {
        var start = 0
        while start < bytes.count, bytes[start] == UInt8(ascii: "\r") || bytes[start] == lineFeed { start += 1 }
        guard let statusEnd = bytes[start...].firstIndex(of: lineFeed) else {
            throw HTTPResponseParserError.malformedStatusLine(String(decoding: bytes[start...], as: UTF8.self))
        }
        let statusLine = trimmed(bytes[start..<statusEnd])
        let status = try parseStatus(statusLine)
        var framing = BodyFraming.untilClose
        var lineStart = statusEnd + 1
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: lineFeed) ?? bytes.count
            defer { lineStart = lineEnd + 1 }
            let line = trimmed(bytes[lineStart..<lineEnd])
            if line.isEmpty { continue }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon != line.startIndex else {
                throw HTTPResponseParserError.malformedHeader(String(decoding: line, as: UTF8.self))
            }
            let name = line[..<colon]
            if equalsIgnoringCase(name, transferEncoding) {
                if containsIgnoringCase(line[(colon + 1)...], chunked) { framing = .chunked }
            } else if equalsIgnoringCase(name, contentLength), framing != .chunked {
                let value = trimmed(line[(colon + 1)...])
                guard !value.isEmpty, value.count <= 18,
                    value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                else {
                    throw HTTPResponseParserError.invalidContentLength(String(decoding: value, as: UTF8.self))
                }
                framing = .length(value.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) })
            }
        }
        let fields = statusEnd + 1 < bytes.count ? Array(bytes[(statusEnd + 1)...]) : []
        return (HTTPResponseHead(status: status, fieldBytes: fields), framing)
    }

    private static let transferEncoding = Array("transfer-encoding".utf8)
    private static let contentLength = Array("content-length".utf8)
    private static let chunked = Array("chunked".utf8)

    private static func parseStatus(_ line: ArraySlice<UInt8>) throws -> Int {
        let text = { String(decoding: line, as: UTF8.self) }
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.prefix(prefix.count).elementsEqual(prefix),
            line[line.startIndex + 8] == UInt8(ascii: " ")
        else { throw HTTPResponseParserError.malformedStatusLine(text()) }
        let digits = line[(line.startIndex + 9)..<(line.startIndex + 12)]
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            line.count == 12 || line[line.startIndex + 12] == UInt8(ascii: " ")
        else { throw HTTPResponseParserError.malformedStatusLine(text()) }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard status >= 100 else { throw HTTPResponseParserError.malformedStatusLine(text()) }
        return status
    }

    /// `bytes` without leading and trailing spaces, tabs and CRs.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
        }
        var slice = bytes
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        return slice
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    private static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: [UInt8]) -> Bool {
        bytes.count == lowercase.count && zip(bytes, lowercase).allSatisfy { lowercased($0) == $1 }
    }

    private static func containsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: [UInt8]) -> Bool {
        guard bytes.count >= lowercase.count else { return false }
        var index = bytes.startIndex
        while index + lowercase.count <= bytes.endIndex {
            if equalsIgnoringCase(bytes[index..<(index + lowercase.count)], lowercase) { return true }
            index += 1
        }
        return false
    }
}
