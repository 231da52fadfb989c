/// A JSON number exactly as written: its text is kept so that no precision is lost and so that
/// integers can be told apart from fractions.
///
/// Strictness: a number is an *integer literal* only when it has neither a fraction nor an
/// exponent. `5` is one; `5.0` and `5e0` are not, so an integer property rejects them.
///
/// ```swift
/// JSONNumber(text: "12")?.int64Value   // 12
/// JSONNumber(text: "5.0")?.int64Value  // nil
/// ```
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number's JSON text (RFC 8259 grammar).
    public let text: String
    /// True when the text has no fraction and no exponent.
    public let isIntegerLiteral: Bool

    /// A number from JSON text, or nil when the text is not a JSON number.
    public init?(text: String) {
        var copy = text
        let valid = copy.withUTF8 { JSONNumber.isValidNumber($0) }
        guard valid else { return nil }
        self.text = text
        self.isIntegerLiteral = !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
    }

    init(uncheckedText text: String, isIntegerLiteral: Bool) {
        self.text = text
        self.isIntegerLiteral = isIntegerLiteral
    }

    public init(_ value: Int) { self.init(uncheckedText: String(value), isIntegerLiteral: true) }
    public init(_ value: Int64) { self.init(uncheckedText: String(value), isIntegerLiteral: true) }
    public init(_ value: UInt64) { self.init(uncheckedText: String(value), isIntegerLiteral: true) }

    /// A finite double, written in Swift's shortest round-tripping form (`100.0`, `0.1`, `1e-05`).
    public init(_ value: Double) {
        precondition(value.isFinite, "JSON has no representation for \(value)")
        self.init(uncheckedText: value.description, isIntegerLiteral: false)
    }

    /// A finite float, written in its shortest round-tripping form.
    public init(_ value: Float) {
        precondition(value.isFinite, "JSON has no representation for \(value)")
        self.init(uncheckedText: value.description, isIntegerLiteral: false)
    }

    /// The value as a signed 64-bit integer, when it is an integer literal that fits.
    public var int64Value: Int64? { isIntegerLiteral ? Int64(text) : nil }

    /// The value as an unsigned 64-bit integer, when it is a non-negative integer literal that fits.
    public var uint64Value: UInt64? { isIntegerLiteral ? UInt64(text) : nil }

    /// The value as a double (infinite when the text overflows a double).
    public var doubleValue: Double { Double(text) ?? .nan }

    /// True for an integer literal with a leading minus sign (`-0` included).
    public var isNegative: Bool { text.utf8.first == UInt8(ascii: "-") }

    public var description: String { text }

    static func isValidNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var scanner = JSONNumberScanner(bytes: bytes, position: 0)
        guard scanner.scan() != nil else { return false }
        return scanner.position == bytes.count
    }
}

/// Scans the RFC 8259 number grammar; shared by ``JSONParser`` and ``JSONNumber/init(text:)``.
struct JSONNumberScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int

    /// Returns whether the number is an integer literal, or nil when the grammar is not met.
    mutating func scan() -> Bool? {
        var isInteger = true
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { return nil }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let digit = peek(), isDigit(digit) else { return nil }
            skipDigits()
        }
        if let e = peek(), e | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            position += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else { return nil }
            skipDigits()
        }
        return isInteger
    }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
    private mutating func skipDigits() {
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
    }
}
