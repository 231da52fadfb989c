/// A strict RFC 8259 JSON parser over bytes, with limits on nesting depth and input size.
///
/// Strict means: no trailing commas, comments, `NaN`, leading zeros, unescaped control characters,
/// invalid UTF-8, lone surrogate escapes or duplicate object keys; nothing but whitespace may follow
/// the value. Errors carry the byte offset.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"fragments":[]}"#.utf8))
/// ```
public struct JSONParser {
    /// Limits that keep hostile input from exhausting the stack or memory.
    public struct Options: Sendable, Hashable {
        /// Deepest nesting of arrays and objects accepted.
        public var maxDepth: Int
        /// Largest input accepted, in bytes.
        public var maxBytes: Int

        public init(maxDepth: Int = 64, maxBytes: Int = 64 << 20) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
        }
    }

    /// Parses a complete JSON text.
    public static func parse(_ bytes: [UInt8], options: Options = Options()) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer, options: options) }
        }
        return try result.get()
    }

    /// Parses a complete JSON text held in a string.
    public static func parse(_ text: String, options: Options = Options()) throws(JSONParseError) -> JSONValue {
        var text = text
        let result: Result<JSONValue, JSONParseError> = text.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer, options: options) }
        }
        return try result.get()
    }

    /// Parses a complete JSON text from raw memory (e.g. a socket read buffer).
    public static func parse(
        buffer: UnsafeBufferPointer<UInt8>, options: Options = Options()
    ) throws(JSONParseError) -> JSONValue {
        guard buffer.count <= options.maxBytes else {
            throw JSONParseError(offset: options.maxBytes, reason: "input larger than \(options.maxBytes) bytes")
        }
        var parser = JSONParser(bytes: buffer, maxDepth: options.maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == buffer.count else { throw parser.error("unexpected content after the JSON value") }
        return value
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var position = 0

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private func error(_ reason: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? position, reason: reason)
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard position < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character '\(printable(bytes[position]))', expected a value")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let start = position
        guard bytes.count - position >= count else { throw error("invalid literal, expected '\(literal)'") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[start + $0] == expected[$0] }
        }
        guard matches else { throw error("invalid literal, expected '\(literal)'") }
        position += count
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = position
        var scanner = JSONNumberScanner(bytes: bytes, position: position)
        guard let isInteger = scanner.scan() else { throw error("invalid number", at: scanner.position) }
        position = scanner.position
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        return JSONNumber(uncheckedText: text, isIntegerLiteral: isInteger)
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth)") }
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input in array") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(elements)
            default: throw error("expected ',' or ']' in array")
            }
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth)") }
        position += 1
        var object = JSONObject()
        var seenKeys: Set<String> = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            let keyOffset = position
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a string key in object")
            }
            let key = try parseString()
            // Small objects (fragments) check by scanning; big ones switch to a set.
            if object.count < 16 {
                if object.members.contains(where: { $0.key == key }) {
                    throw error("duplicate key \"\(key)\" in object", at: keyOffset)
                }
            } else {
                if seenKeys.isEmpty { seenKeys = Set(object.keys) }
                guard seenKeys.insert(key).inserted else {
                    throw error("duplicate key \"\(key)\" in object", at: keyOffset)
                }
            }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected ':' after object key")
            }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            object.appendUnchecked(key: key, value: value)
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input in object") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(object)
            default: throw error("expected ',' or '}' in object")
            }
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        position += 1
        let start = position
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                guard let string = String(validating: slice, as: UTF8.self) else {
                    throw error("invalid UTF-8 in string", at: start)
                }
                position += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("unescaped control character in string") }
            position += 1
        }
        guard position < bytes.count else { throw error("unterminated string", at: start - 1) }
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw error("invalid UTF-8 in string", at: start)
                }
                position += 1
                return string
            case UInt8(ascii: "\\"):
                try parseEscape(into: &buffer)
            case 0..<0x20:
                throw error("unescaped control character in string")
            default:
                buffer.append(byte)
                position += 1
            }
        }
        throw error("unterminated string", at: start - 1)
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = position
        position += 1
        guard position < bytes.count else { throw error("unterminated escape") }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(byte)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try parseHex4())
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("lone high surrogate in \\u escape", at: escapeStart) }
                position += 2
                let low = UInt32(try parseHex4())
                guard (0xDC00..<0xE000).contains(low) else {
                    throw error("invalid low surrogate in \\u escape", at: escapeStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("lone low surrogate in \\u escape", at: escapeStart)
            }
            buffer.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(scalar)!)!)
        default:
            throw error("invalid escape '\\\(printable(byte))'", at: escapeStart)
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard bytes.count - position >= 4 else { throw error("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    private func printable(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "0x" + String(byte, radix: 16)
    }
}

/// Why a JSON text could not be parsed, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Zero-based offset of the offending byte in the input.
    public let offset: Int
    /// What was wrong, e.g. "expected ',' or '}' in object".
    public let reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
