import CLinuxIO
import Glibc

/// How a ``SocketServer`` listens and bounds its connections.
///
/// ```swift
/// var configuration = SocketServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)])
/// configuration.loopCount = 2
/// ```
public struct SocketServerConfiguration: Sendable {
    /// Where to accept connections.
    public var addresses: [ListenAddress]
    /// Loop threads; default one per core.
    public var loopCount: Int
    /// Unsent bytes per connection before the handler's policy hook runs; default 1 MiB.
    public var maxPendingBytes: Int
    /// How long a closing connection drains the peer's input after our last response; default 2 s.
    public var lingerTimeout: Duration
    /// Open connections at most, over all loops (each loop takes its share); a connection beyond it
    /// is closed as it is accepted. 0: only the descriptor limit bounds them.
    public var maxConnections = 0
    /// How long a connection may hold unsent bytes that the peer takes none of (its socket stays
    /// full); then it is closed and counted (``SocketServer/stalledConnections``). nil: no limit.
    public var sendTimeout: Duration?

    public init(
        addresses: [ListenAddress], loopCount: Int = SocketServerConfiguration.coreCount,
        maxPendingBytes: Int = 1 << 20, lingerTimeout: Duration = .seconds(2)
    ) {
        self.addresses = addresses
        self.loopCount = loopCount
        self.maxPendingBytes = maxPendingBytes
        self.lingerTimeout = lingerTimeout
    }

    /// The number of online cores (at least 1).
    public static var coreCount: Int {
        max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
    }
}

/// Where a server accepts connections.
///
/// ```swift
/// let addresses: [ListenAddress] = [.tcp(host: "::", port: 8080), .unix(path: "/run/app.sock")]
/// ```
public enum ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 or IPv6 literal (or `localhost`) and a port; port 0 picks a free one. `::`
    /// listens on IPv6 and IPv4 together.
    case tcp(host: String, port: Int)
    /// A Unix domain socket path, for a reverse proxy on the same machine. A stale file at the
    /// path is replaced.
    case unix(path: String)

    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }
}
