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
            let head = try Self.parseHead(line)
            line.removeAll(keepingCapacity: true)
            try handle(.head(head))
            try startBody(of: head, handle)
            return index
        }
        if line.count > maxHeadBytes { throw HTTPResponseParserError.headTooLarge(limit: maxHeadBytes) }
        return index
    }

    private mutating func startBody(of head: HTTPResponseHead, _ handle: (Event) throws -> Void) throws {
        if head.status < 200 || head.status == 204 || head.status == 304 {
            state = .head
            if head.status >= 200 { try handle(.end) }
            return
        }
        if let encoding = head.value(of: "transfer-encoding"), encoding.lowercased().contains("chunked") {
            state = .chunkSize
        } else if let length = head.value(of: "content-length") {
            guard let count = Int(length), count >= 0 else {
                throw HTTPResponseParserError.invalidContentLength(length)
            }
            if count == 0 {
                state = .head
                try handle(.end)
            } else {
                state = .fixedBody(remaining: count)
            }
        } else {
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

    static func parseHead(_ bytes: [UInt8]) throws -> HTTPResponseHead {
        var lines = bytes.split(separator: lineFeed, omittingEmptySubsequences: true).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        lines.removeAll { $0.isEmpty }
        guard let statusLine = lines.first else { throw HTTPResponseParserError.malformedStatusLine("") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3,
            let status = Int(parts[1]), status >= 100
        else { throw HTTPResponseParserError.malformedStatusLine(statusLine) }
        var headers: [(name: String, value: String)] = []
        for field in lines.dropFirst() {
            guard let colon = field.firstIndex(of: ":"), colon != field.startIndex else {
                throw HTTPResponseParserError.malformedHeader(field)
            }
            let name = field[..<colon].lowercased()
            let value = field[field.index(after: colon)...].trimmingCharacters(in: " \t")
            headers.append((name: name, value: value))
        }
        return HTTPResponseHead(status: status, headers: headers)
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = self[...]
        while let first = slice.first, characters.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, characters.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
