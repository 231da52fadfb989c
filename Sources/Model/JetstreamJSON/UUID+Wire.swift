import Foundation

extension UUID {
    /// Parses a canonical 8-4-4-4-12 hex UUID in any letter case; nil for anything else
    /// (braces, missing hyphens, extra characters).
    ///
    /// ```swift
    /// UUID(wireString: "5F0C61D2-0B45-4F5E-9E8B-6F1B7D2C3A10")?.wireString
    /// // "5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10"
    /// ```
    public init?(wireString: String) {
        var string = wireString
        let parsed: uuid_t? = string.withUTF8 { UUID.parse($0) }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    /// The lowercase canonical form used on the wire.
    public var wireString: String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            writeLowercase(into: buffer)
            return 36
        }
    }

    /// Appends the lowercase canonical form to a byte buffer without an intermediate String.
    func appendLowercase(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer { buffer in
            writeLowercase(into: UnsafeMutableBufferPointer(rebasing: buffer[start..<(start + 36)]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private func writeLowercase(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        withUnsafeBytes(of: uuid) { raw in
            var out = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                let byte = raw[index]
                buffer[out] = UUID.hexDigits[Int(byte >> 4)]
                buffer[out + 1] = UUID.hexDigits[Int(byte & 0xF)]
                out += 2
            }
        }
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> uuid_t? {
        guard text.count == 36 else { return nil }
        var result: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let valid = withUnsafeMutableBytes(of: &result) { bytes -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = hexValue(text[position]), let low = hexValue(text[position + 1]) else {
                    return false
                }
                bytes[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return valid ? result : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
