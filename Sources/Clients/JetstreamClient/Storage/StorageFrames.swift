/// How records are laid out in the storage files: each is `length` (4 bytes, little endian),
/// `CRC-32 of the payload` (4 bytes, little endian), then the payload. A reader stops at the first
/// record that does not check out, so a write torn by a crash costs only that write.
enum StorageFrames {
    /// The largest record accepted when reading (a length beyond it is damage, not a record).
    static let maxRecordBytes = 1 << 30

    static func frame(_ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + 8)
        append(UInt32(payload.count), to: &bytes)
        append(CRC32.checksum(payload), to: &bytes)
        bytes += payload
        return bytes
    }

    /// What a file's bytes hold: the whole records in order, and what followed the last of them.
    struct Reading: Sendable {
        var records: [ArraySlice<UInt8>] = []
        /// Where the whole records end.
        var validLength = 0
        /// Why the bytes after `validLength` are not a record: nil when there are none.
        var tail: Tail?
    }

    enum Tail: Sendable, Equatable {
        /// The last record is cut short (a write torn by a crash): the writer had not finished it.
        case torn(bytes: Int)
        /// A record whose checksum or length does not check out, with bytes after it: damage.
        case damaged(atOffset: Int, bytes: Int)
    }

    static func read(_ bytes: [UInt8]) -> Reading {
        var reading = Reading()
        var offset = 0
        while offset < bytes.count {
            let left = bytes.count - offset
            guard left >= 8 else {
                reading.tail = .torn(bytes: left)
                break
            }
            let length = Int(uint32(bytes, at: offset))
            let checksum = uint32(bytes, at: offset + 4)
            guard length <= maxRecordBytes else {
                reading.tail = .damaged(atOffset: offset, bytes: left)
                break
            }
            guard length <= left - 8 else {
                reading.tail = .torn(bytes: left)
                break
            }
            let payload = bytes[(offset + 8)..<(offset + 8 + length)]
            guard CRC32.checksum(payload) == checksum else {
                // The last record with a bad checksum and nothing after it is a torn write (its
                // length landed, not all its bytes); one followed by more bytes is damage.
                reading.tail = left == length + 8 ? .torn(bytes: left) : .damaged(atOffset: offset, bytes: left)
                break
            }
            reading.records.append(payload)
            offset += 8 + length
            reading.validLength = offset
        }
        return reading
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { value, index in value | UInt32(bytes[offset + index]) << UInt32(index * 8) }
    }
}
