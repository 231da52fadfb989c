/// The header fields that decide framing and connection handling, recognised without allocating.
enum HTTP1FieldKind {
    case contentLength, transferEncoding, host, connection, expect, other

    init(_ name: String) {
        var name = name
        self = name.withUTF8 { bytes in
            switch bytes.count {
            case 4 where Self.matches(bytes, "host"): .host
            case 6 where Self.matches(bytes, "expect"): .expect
            case 10 where Self.matches(bytes, "connection"): .connection
            case 14 where Self.matches(bytes, "content-length"): .contentLength
            case 17 where Self.matches(bytes, "transfer-encoding"): .transferEncoding
            default: .other
            }
        }
    }

    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { HTTP1Syntax.lowercased($0) == $1 }
        }
    }
}
