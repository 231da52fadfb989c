/// The `id:` of a many-scope stream (`GET /v1/events`): the position of every scope the stream has
/// brought to a version — the version its last `snapshot`, `reset` or `changeset` carried — so a
/// client that keeps only the last id resumes every scope exactly. Opaque to clients.
///
/// `m` and then one 16-character entry per positioned scope: 12 bytes in base64url — 6 bytes of a
/// 64-bit FNV-1a hash of the name (stable across processes and nodes) and the version in 6 bytes,
/// big-endian. An entry has a fixed width so a stream keeps its id as text and rewrites only the
/// entry of the scope an event moved (``ManyScopesStream``): an event costs one 16-character
/// encoding and a copy, not an encoding of every scope. A scope costs 16 characters whatever the
/// length of its name. A request names its scopes, so the hashes only tell those apart; a name
/// whose hash collides with another of the request's is not resumed (it gets a snapshot).
///
/// ```swift
/// var id = ManyScopesEventID.prefix
/// id += ManyScopesEventID.entry(key: ManyScopesEventID.key(of: "canvas-1"), version: 41)
/// ManyScopesEventID.decode(String(decoding: id, as: UTF8.self))   // [key: 41]
/// ```
enum ManyScopesEventID {
    static let prefix: [UInt8] = Array("m".utf8)
    /// Characters per scope.
    static let entryWidth = 16

    /// The scope's key in an id: the top 48 bits of its name's 64-bit FNV-1a hash.
    static func key(of name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash >> 16
    }

    /// One scope's 16 characters.
    static func entry(key: UInt64, version: Int) -> [UInt8] {
        let version = UInt64(clamping: max(version, 0)) & 0xFFFF_FFFF_FFFF
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<6 {
            bytes[index] = UInt8(truncatingIfNeeded: key >> (40 - 8 * index))
            bytes[6 + index] = UInt8(truncatingIfNeeded: version >> (40 - 8 * index))
        }
        return base64URL(bytes)
    }

    /// The id of `positions`, in their order.
    static func encode(_ positions: some Sequence<(key: UInt64, version: Int)>) -> String {
        var text = prefix
        for (key, version) in positions { text += entry(key: key, version: version) }
        return String(decoding: text, as: UTF8.self)
    }

    /// The positions an id holds, nil when it is not one of these ids (then every scope starts
    /// with a snapshot, as without an id).
    static func decode(_ text: String) -> [UInt64: Int]? {
        let bytes = Array(text.utf8)
        guard bytes.starts(with: prefix), (bytes.count - prefix.count) % entryWidth == 0, bytes.count < 1 << 20
        else { return nil }
        var positions: [UInt64: Int] = [:]
        var index = prefix.count
        while index < bytes.count {
            guard let raw = decodeBase64URL(bytes[index..<index + entryWidth]) else { return nil }
            let key = raw[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let version = raw[6..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            positions[key] = Int(version)
            index += entryWidth
        }
        return positions
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Base64url of a multiple of 3 bytes (no padding ever needed).
    private static func base64URL(_ bytes: [UInt8]) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count / 3 * 4)
        var index = 0
        while index + 2 < bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { text.append(alphabet[Int(group >> UInt32(shift) & 0x3F)]) }
            index += 3
        }
        return text
    }

    /// The bytes of unpadded base64url text of a multiple of 4 characters; nil for another character.
    private static func decodeBase64URL(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 4 * 3)
        var index = text.startIndex
        while index + 3 < text.endIndex {
            var group: UInt32 = 0
            for offset in 0..<4 {
                let value = values[Int(text[index + offset])]
                guard value != 0xFF else { return nil }
                group = group << 6 | UInt32(value)
            }
            bytes += [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
            index += 4
        }
        return bytes
    }
}
