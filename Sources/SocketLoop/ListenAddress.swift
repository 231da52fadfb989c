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
