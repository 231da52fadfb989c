import Foundation

/// The `id:` of a many-scope stream (`GET /v1/events`): the position of every scope the stream has
/// brought to a version — the version its last `snapshot`, `reset` or `changeset` carried — so a
/// client that keeps only the last id resumes every scope exactly. Opaque to clients.
///
/// Each scope is 8 bytes of a 64-bit FNV-1a hash of its name (stable across processes and nodes)
/// and its version as an unsigned LEB128 varint (1–10 bytes); the whole is `m` followed by
/// unpadded base64url. So a scope costs at most 18 bytes, 24 characters, whatever the length of
/// its name, and an id grows linearly with the number of scopes. A request names its scopes, so
/// the hashes only have to tell those apart; a name whose hash collides with another of the
/// request's is simply not resumed (it gets a snapshot).
///
/// ```swift
/// let id = ManyScopesEventID.encode([(ManyScopesEventID.key(of: "canvas-1"), 41)])
/// ManyScopesEventID.decode(id)   // [key: 41]
/// ```
enum ManyScopesEventID {
    static let prefix = "m"

    /// The scope's key in an id.
    static func key(of name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    static func encode(_ positions: some Sequence<(key: UInt64, version: Int)>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(18 * 4)
        for (key, version) in positions {
            withUnsafeBytes(of: key.bigEndian) { bytes.append(contentsOf: $0) }
            var rest = UInt64(max(version, 0))
            repeat {
                let low = UInt8(rest & 0x7F)
                rest >>= 7
                bytes.append(rest == 0 ? low : low | 0x80)
            } while rest != 0
        }
        return prefix + Data(bytes).base64EncodedString().base64URL
    }

    /// The positions an id holds, nil when it is not one of these ids (then every scope starts
    /// with a snapshot, as without an id).
    static func decode(_ text: String) -> [UInt64: Int]? {
        guard text.hasPrefix(prefix), text.utf8.count < 1 << 20 else { return nil }
        var base64 = String(text.dropFirst(prefix.count))
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        let bytes = [UInt8](data)
        var positions: [UInt64: Int] = [:]
        var index = 0
        while index < bytes.count {
            guard index + 8 < bytes.count else { return nil }
            let key = bytes[index..<index + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            index += 8
            var version: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 63 else { return nil }
                let byte = bytes[index]
                index += 1
                version |= UInt64(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            guard version <= UInt64(Int.max) else { return nil }
            positions[key] = Int(version)
        }
        return positions
    }
}

extension String {
    /// Base64 as base64url without padding (RFC 4648 §5): fits an SSE `id:` line and a URL.
    fileprivate var base64URL: String {
        var text = self
        while text.hasSuffix("=") { text.removeLast() }
        return text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}
