/// The client's address as the gateway believes it: the socket's peer, or, when the peer is a
/// trusted proxy, the address that proxy forwarded (`X-Forwarded-For`, or RFC 7239 `Forwarded`).
///
/// The forwarded chain is read from the right: each hop appended the address it received from,
/// so the rightmost address that is not itself a trusted proxy is the client. Headers from an
/// untrusted peer are ignored, so a client cannot choose its own rate-limit bucket.
///
/// ```swift
/// let proxies = try TrustedProxies(["10.0.0.0/8"])
/// ClientAddress.resolve(peer: "10.0.0.5:4711", forwardedFor: "203.0.113.9", forwarded: nil, trusted: proxies)
/// // "203.0.113.9"
/// ```
public enum ClientAddress {
    /// The host part of an engine peer address (`127.0.0.1:5000` → `127.0.0.1`, `[::1]:5000` → `::1`).
    public static func host(ofPeer peer: String) -> String {
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            return String(peer[peer.index(after: peer.startIndex)..<close])
        }
        let colons = peer.count { $0 == ":" }
        if colons == 1, let colon = peer.firstIndex(of: ":") { return String(peer[..<colon]) }
        return peer
    }

    /// The real client for a request from `peer` with these forwarding headers.
    public static func resolve(
        peer: String, forwardedFor: String?, forwarded: String?, trusted: TrustedProxies
    )
        -> String
    {
        let peerHost = host(ofPeer: peer)
        guard !trusted.isEmpty, trusted.contains(peerHost) else { return peerHost }
        let chain: [String]
        if let forwarded, !forwarded.isEmpty {
            chain = forwardedNodes(rfc7239: forwarded)
        } else if let forwardedFor, !forwardedFor.isEmpty {
            chain = forwardedFor.split(separator: ",").map { host(ofPeer: String($0).trimmingSpaces) }
        } else {
            return peerHost
        }
        for address in chain.reversed() where !address.isEmpty {
            if !trusted.contains(address) { return address }
        }
        return chain.first { !$0.isEmpty } ?? peerHost
    }

    /// The `for=` addresses of an RFC 7239 `Forwarded` value, in order (quotes, brackets and
    /// ports removed; obfuscated identifiers such as `_hidden` or `unknown` kept as they are).
    public static func forwardedNodes(rfc7239 value: String) -> [String] {
        var addresses: [String] = []
        for element in value.split(separator: ",") {
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, String(parts[0]).trimmingSpaces.lowercased() == "for" else { continue }
                var node = String(parts[1]).trimmingSpaces
                if node.hasPrefix("\""), node.hasSuffix("\""), node.count >= 2 {
                    node = String(node.dropFirst().dropLast())
                }
                addresses.append(host(ofPeer: node))
            }
        }
        return addresses
    }
}
