/// Client frames written by hand (RFC 9113 §4.1; HPACK literals without Huffman coding).
enum H2Frames {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let initialWindowSize: UInt16 = 0x4

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length), type, flags,
            UInt8(truncatingIfNeeded: stream >> 24) & 0x7f, UInt8(truncatingIfNeeded: stream >> 16),
            UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream),
        ] + payload
    }

    static func settings(_ entries: [(UInt16, UInt32)]) -> [UInt8] {
        var payload: [UInt8] = []
        for (id, value) in entries {
            payload += [UInt8(id >> 8), UInt8(id & 0xff)]
            payload += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
        }
        return frame(type: 0x4, flags: 0, stream: 0, payload)
    }

    /// HEADERS with END_HEADERS: pseudo-header fields as literals with an indexed name from the
    /// static table (`:authority` 1, `:method` 2, `:path` 4, `:scheme` 6), never indexed.
    static func headers(stream: UInt32, method: String, path: String, endStream: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (index, value) in [(UInt8(2), method), (6, "http"), (4, path), (1, "test")] {
            block += [index, UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return frame(type: 0x1, flags: 0x4 | (endStream ? 0x1 : 0), stream: stream, block)
    }

    static func data(stream: UInt32, _ bytes: [UInt8], endStream: Bool) -> [UInt8] {
        frame(type: 0x0, flags: endStream ? 0x1 : 0, stream: stream, bytes)
    }

    /// RST_STREAM with CANCEL.
    static func reset(stream: UInt32) -> [UInt8] {
        frame(type: 0x3, flags: 0, stream: stream, [0, 0, 0, 0x8])
    }
}
