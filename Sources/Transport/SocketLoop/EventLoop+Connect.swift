import CLinuxIO
import Glibc
import Logging
import Synchronization

/// An IPv4 address and port to connect to (or to bind a client socket to, with port 0).
///
/// ```swift
/// let server = try IPv4Endpoint("127.0.0.1", port: 8080)
/// ```
public struct IPv4Endpoint: Sendable, CustomStringConvertible {
    /// The address in network byte order.
    public var address: in_addr
    public var port: UInt16

    public init(address: in_addr, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// A dotted-quad address (`localhost` means 127.0.0.1); no name resolution.
    public init(_ host: String, port: UInt16) throws(SocketError) {
        var address = in_addr()
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address) == 1 else {
            throw SocketError(operation: "parse IPv4 address \(host.debugDescription)", code: EINVAL)
        }
        self.init(address: address, port: port)
    }

    public var description: String { SocketPeer.describe(socketStorage) }

    /// The address as a `sockaddr_storage` (what ``Connection`` keeps for its peer).
    var socketStorage: sockaddr_storage {
        var storage = sockaddr_storage()
        var address = socketAddress
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
        }
        return storage
    }

    var socketAddress: sockaddr_in {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        socketAddress.sin_addr = address
        return socketAddress
    }
}

extension EventLoop {
    /// A loop of one's own for outbound connections (a client or a load generator): no listeners.
    /// Run it with ``run()`` on a thread of yours and end it with ``stop()``.
    ///
    /// ```swift
    /// let loop = try EventLoop(index: 0)
    /// loop.execute { _ = try? loop.connect(to: IPv4Endpoint("127.0.0.1", port: 8080), handler: client) }
    /// loop.run()   // until loop.stop()
    /// ```
    public convenience init(
        index: Int, maxPendingBytes: Int = 64 << 20, logger: Logger = Logger(label: "SocketLoop")
    ) throws {
        try self.init(
            index: index, maxPendingBytes: maxPendingBytes, lingerTimeout: .seconds(1), logger: logger,
            makeHandler: { _ in RefusingHandler() })
    }

    /// Opens a non-blocking TCP connection to `endpoint` and registers it on this loop; call on
    /// the loop thread. The handler hears ``ConnectionHandler/connectionDidOpen(_:)`` once the
    /// connection is established, or ``ConnectionHandler/connectionDidClose(_:)`` with
    /// ``Connection/failure`` set if it cannot be. Bytes written before it is established are sent
    /// then.
    ///
    /// - Parameter source: a local address to bind first (port chosen at connect time), so many
    ///   connections can spread over 127.0.0.1 … 127.0.0.N; nil lets the kernel choose.
    @discardableResult
    public func connect(
        to endpoint: IPv4Endpoint, from source: in_addr? = nil, handler: any ConnectionHandler
    ) throws(SocketError) -> Connection {
        let descriptor = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError.lastError("socket") }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if let source {
            // IP_BIND_ADDRESS_NO_PORT (24): pick the port at connect time, per destination, so
            // tens of thousands of connections from one source do not exhaust its ports.
            setsockopt(descriptor, Int32(IPPROTO_IP), 24, &one, socklen_t(MemoryLayout<Int32>.size))
            var local = IPv4Endpoint(address: source, port: 0).socketAddress
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let error = SocketError.lastError("bind \(IPv4Endpoint(address: source, port: 0))")
                CLinuxIO.close(descriptor)
                throw error
            }
        }
        var remote = endpoint.socketAddress
        let result = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 || errno == EINPROGRESS else {
            let error = SocketError.lastError("connect \(endpoint)")
            CLinuxIO.close(descriptor)
            throw error
        }
        let connection = Connection(loop: self, fileDescriptor: descriptor, peer: endpoint.socketStorage)
        connection.isConnecting = true
        connection.attach(handler)
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: descriptor))
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else {
            let error = SocketError.lastError("epoll_ctl add")
            CLinuxIO.close(descriptor)
            throw error
        }
        register(connection)
        return connection
    }

    /// Completes a non-blocking connect once epoll reports the socket: established, or closed
    /// with ``Connection/failure``.
    func finishConnecting(_ connection: Connection) {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(connection.fileDescriptor, SOL_SOCKET, SO_ERROR, &code, &length)
        connection.isConnecting = false
        guard code == 0 else {
            connection.fail(SocketError(operation: "connect \(connection.remoteAddress)", code: code))
            return
        }
        connection.handler?.connectionDidOpen(connection)
        if !connection.isClosed, connection.pendingBytes > 0 { connection.flush() }
    }

    /// Adds an accepted or connecting socket to the loop's table.
    func register(_ connection: Connection) {
        let slot = Int(connection.fileDescriptor)
        if slot >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: slot - connections.count + 1))
        }
        connections[slot] = connection
        connectionCount.add(1, ordering: .relaxed)
    }
}

/// The handler of a client-only loop's (absent) listeners.
private final class RefusingHandler: ConnectionHandler {
    func connectionDidOpen(_ connection: Connection) { connection.close() }
    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {}
}
