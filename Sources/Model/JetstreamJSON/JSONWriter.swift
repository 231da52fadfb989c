import Foundation

/// Writes compact JSON into a byte buffer; the encoder behind every response and event.
///
/// Output is deterministic: members in their stored order, numbers as their stored text, strings
/// escaped minimally (`"`, `\`, control characters; everything else as UTF-8).
///
/// ```swift
/// var writer = JSONWriter()
/// writer.write(["version": 3])
/// writer.bytes   // {"version":3}
/// ```
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends a value as compact JSON.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let flag): writeRaw(flag ? "true" : "false")
        case .number(let number): writeRaw(number.text)
        case .string(let string): write(string: string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object): write(object: object)
        }
    }

    /// Appends an object, members in their order.
    public mutating func write(object: JSONObject) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for member in object {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            write(string: member.key)
            bytes.append(UInt8(ascii: ":"))
            write(member.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends bytes that are already JSON (e.g. a fragment encoded once and reused).
    public mutating func writeRaw(_ json: some Sequence<UInt8>) { bytes.append(contentsOf: json) }

    /// Appends text that is already JSON.
    public mutating func writeRaw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// Writes a UUID as a lowercase JSON string.
    public mutating func write(uuid: UUID) {
        bytes.append(UInt8(ascii: "\""))
        uuid.appendLowercase(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends a string as a JSON string literal, escaping only what JSON requires.
    public mutating func write(string: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copy them in one go.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            bytes.append(contentsOf: string.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x0A:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "n"))
            case 0x0D:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "r"))
            case 0x09:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "t"))
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                ])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
