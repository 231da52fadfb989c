import CLinuxIO
import Glibc

/// Where the load goes: an `http://host:port` base URL resolved to one IPv4 address.
///
/// ```swift
/// let target = try BenchTarget(url: "http://127.0.0.1:8080")
/// target.isLoopback   // true
/// ```
public struct BenchTarget: Sendable, CustomStringConvertible {
    public enum Failure: Error, CustomStringConvertible {
        case unsupportedURL(String)
        case unresolvable(String)

        public var description: String {
            switch self {
            case .unsupportedURL(let url):
                "unsupported URL \(url.debugDescription): give http://HOST:PORT (plain HTTP, IPv4 or a name)"
            case .unresolvable(let host): "cannot resolve \(host.debugDescription) to an IPv4 address"
            }
        }
    }

    public let host: String
    public let port: UInt16
    /// The resolved IPv4 address in network byte order.
    public let address: in_addr
    /// The `Host` header value.
    public var authority: String { "\(host):\(port)" }
    /// True for 127.0.0.0/8.
    public var isLoopback: Bool { (UInt32(bigEndian: address.s_addr) >> 24) == 127 }
    public var description: String { "http://\(authority)" }

    public init(url: String) throws {
        guard url.hasPrefix("http://") else { throw Failure.unsupportedURL(url) }
        var rest = url.dropFirst("http://".count)
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else { throw Failure.unsupportedURL(url) }
            rest = rest[..<slash]
        }
        let host: Substring
        let port: UInt16
        if let colon = rest.lastIndex(of: ":") {
            guard let parsed = UInt16(rest[rest.index(after: colon)...]), parsed > 0 else {
                throw Failure.unsupportedURL(url)
            }
            host = rest[..<colon]
            port = parsed
        } else {
            host = rest
            port = 80
        }
        guard !host.isEmpty else { throw Failure.unsupportedURL(url) }
        self.host = String(host)
        self.port = port
        self.address = try Self.resolve(String(host))
    }

    private static func resolve(_ host: String) throws -> in_addr {
        var address = in_addr()
        if inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address) == 1 { return address }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result,
            let socketAddress = first.pointee.ai_addr
        else { throw Failure.unresolvable(host) }
        defer { freeaddrinfo(result) }
        return socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
    }

    /// `connect(descriptor)` to the target (blocking or not, as the socket is); returns its result.
    func connect(_ descriptor: Int32) -> Int32 {
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr = address
        return withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}

/// What every `jetstream bench` mode shares: where to send the load and how to bound it.
public struct BenchSettings: Sendable {
    public var target: BenchTarget
    /// Client loops (threads) carrying subscribers or connections.
    public var threads: Int
    public var sources: SourceAddresses
    /// A hard bound on the whole run, set-up included.
    public var timeoutSeconds: Double
    /// Receives a one-line status about once a second (stderr in the CLI).
    public var progress: @Sendable (String) -> Void

    public init(
        target: BenchTarget, threads: Int, sources: SourceAddresses, timeoutSeconds: Double,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.target = target
        self.threads = max(1, threads)
        self.sources = sources
        self.timeoutSeconds = timeoutSeconds
        self.progress = progress
    }

    /// The absolute CLOCK_MONOTONIC deadline of a run starting now.
    func deadline(from start: UInt64) -> UInt64 {
        start + UInt64(max(0, timeoutSeconds) * 1e9)
    }
}

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
