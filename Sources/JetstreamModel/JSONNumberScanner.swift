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
