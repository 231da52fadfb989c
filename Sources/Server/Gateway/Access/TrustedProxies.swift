import Foundation

/// Addresses and CIDR ranges (IPv4 and IPv6) whose forwarding headers are believed
/// (`--trusted-proxy`).
///
/// ```swift
/// let proxies = try TrustedProxies(["127.0.0.1", "10.0.0.0/8", "fd00::/8"])
/// proxies.contains("10.1.2.3")   // true
/// ```
public struct TrustedProxies: Sendable {
    struct Range: Sendable {
        var bytes: [UInt8]
        var prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for index in bytes.indices where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    public struct InvalidAddress: Error, CustomStringConvertible {
        public let description: String
    }

    let ranges: [Range]

    /// No proxy is trusted: forwarding headers are ignored.
    public static let none = TrustedProxies(ranges: [])

    private init(ranges: [Range]) {
        self.ranges = ranges
    }

    public init(_ specifications: [String]) throws {
        ranges = try specifications.map { specification in
            let parts = specification.split(separator: "/", maxSplits: 1)
            guard let first = parts.first, let bytes = Self.parse(String(first)) else {
                throw InvalidAddress(description: "'\(specification)' is not an IP address or CIDR range")
            }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let length = Int(parts[1]), (0...prefix).contains(length) else {
                    throw InvalidAddress(description: "'\(specification)' has an invalid prefix length")
                }
                prefix = length
            }
            return Range(bytes: bytes, prefixLength: prefix)
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.parse(address) else { return false }
        if ranges.contains(where: { $0.contains(bytes) }) { return true }
        // An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is the IPv4 address.
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            let v4 = Array(bytes[12...])
            return ranges.contains { $0.contains(v4) }
        }
        return false
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address in text form, nil for anything else.
    static func parse(_ text: String) -> [UInt8]? {
        if !text.contains(":") { return parseIPv4(Substring(text)) }
        var text = Substring(text)
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        var tail: [UInt8] = []
        if let lastColon = text.lastIndex(of: ":"), text[text.index(after: lastColon)...].contains(".") {
            guard let v4 = parseIPv4(text[text.index(after: lastColon)...]) else { return nil }
            tail = v4
            text = text[...lastColon]
            if text.hasSuffix(":"), !text.hasSuffix("::") { text = text.dropLast() }
        }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            if part.isEmpty { return [] }
            var bytes: [UInt8] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 {
            let all = head + tail
            return all.count == 16 ? all : nil
        }
        guard let rest = groups(halves[1]) else { return nil }
        let fill = 16 - head.count - rest.count - tail.count
        guard fill >= 2 else { return nil }
        return head + [UInt8](repeating: 0, count: fill) + rest + tail
    }

    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }
}
