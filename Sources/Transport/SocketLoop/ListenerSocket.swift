import CLinuxIO
import Glibc

/// Creates listening sockets: non-blocking, close-on-exec, `SO_REUSEADDR` and (TCP)
/// `SO_REUSEPORT` so each loop binds its own listener to the same port.
enum ListenerSocket {
    static let backlog: Int32 = 4096

    /// Refuses a port another process listens on. `SO_REUSEPORT` lets every socket of the same
    /// user join a port, so without this a second server would start silently and the kernel would
    /// split clients between the two: a probe bound *without* it fails with `EADDRINUSE` while any
    /// listener holds the port (our own loops then share it through `SO_REUSEPORT`).
    static func checkUnused(host: String, port: Int) throws(SocketError) {
        guard port != 0 else { return }
        do throws(SocketError) {
            let probe = try makeTCP(host: host, port: port, reusePort: false, listens: false)
            CLinuxIO.close(probe.descriptor)
        } catch  where error.code == EADDRINUSE {
            throw SocketError(
                operation: "listen on \(ListenAddress.tcp(host: host, port: port)) (another process listens there)",
                code: EADDRINUSE)
        }
    }

    /// Binds and listens on `host:port`; returns the descriptor and the port actually bound.
    static func makeTCP(
        host: String, port: Int, reusePort: Bool = true, listens: Bool = true
    ) throws(SocketError) -> (descriptor: Int32, port: Int) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        let isIPv6 = literal.contains(":")
        let family = isIPv6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError.lastError("socket") }
        do throws(SocketError) {
            try setOption(descriptor, SOL_SOCKET, SO_REUSEADDR, 1)
            if reusePort { try setOption(descriptor, SOL_SOCKET, SO_REUSEPORT, 1) }
            let described = ListenAddress.tcp(host: host, port: port).description
            if isIPv6 {
                // `::` serves IPv4 too (dual stack); a specific IPv6 address only itself.
                try setOption(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, literal == "::" ? 0 : 1)
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
                guard inet_pton(AF_INET6, literal, &address.sin6_addr) == 1 else {
                    throw SocketError(operation: "parse IPv6 address \(host)", code: EINVAL)
                }
                let result = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    }
                }
                guard result == 0 else { throw SocketError.lastError("bind \(described)") }
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
                guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
                    throw SocketError(operation: "parse IPv4 address \(host)", code: EINVAL)
                }
                let result = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard result == 0 else { throw SocketError.lastError("bind \(described)") }
            }
            guard !listens || listen(descriptor, backlog) == 0 else {
                throw SocketError.lastError("listen \(described)")
            }
            return (descriptor, try boundPort(descriptor))
        } catch {
            CLinuxIO.close(descriptor)
            throw error
        }
    }

    /// Binds and listens on a Unix socket path, replacing a stale socket file.
    static func makeUnix(path: String) throws(SocketError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else {
            throw SocketError(
                operation: "unix socket path longer than \(capacity - 1) bytes: \(path)", code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { storage in
            for (position, byte) in pathBytes.enumerated() { storage[position] = byte }
        }
        let descriptor = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError.lastError("socket") }
        unlink(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0, listen(descriptor, backlog) == 0 else {
            let error = SocketError.lastError("bind unix:\(path)")
            CLinuxIO.close(descriptor)
            throw error
        }
        return descriptor
    }

    private static func setOption(
        _ descriptor: Int32, _ level: Int32, _ name: Int32, _ value: Int32
    ) throws(SocketError) {
        var value = value
        guard setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SocketError.lastError("setsockopt \(name)")
        }
    }

    private static func boundPort(_ descriptor: Int32) throws(SocketError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw SocketError.lastError("getsockname") }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin_port))
                }
            }
        }
    }
}
