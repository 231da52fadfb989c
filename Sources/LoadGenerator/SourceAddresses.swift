import CLinuxIO
import Glibc

/// Local addresses client sockets bind to, round-robin: 127.0.0.1 … 127.0.0.N. Spreading
/// connections over several loopback sources multiplies the ephemeral ports available and keeps a
/// per-address limit on the server (streams per client) from counting them all as one client.
public struct SourceAddresses: Sendable {
    public let count: Int

    /// `count` 0 or 1 means "let the kernel choose".
    public init(count: Int) {
        self.count = max(1, min(count, 254))
    }

    /// The source for connection number `index`, or nil to let the kernel choose.
    public func address(for index: Int) -> in_addr? {
        guard count > 1 else { return nil }
        let host = UInt32(127 << 24) | UInt32(1 + index % count)
        return in_addr(s_addr: host.bigEndian)
    }

    /// The dotted form of ``address(for:)``, for messages.
    public func name(for index: Int) -> String {
        count > 1 ? "127.0.0.\(1 + index % count)" : "any"
    }
}
