import Glibc

/// A blocking loopback client socket for tests, with a poll timeout on every read.
public final class TestSocket {
    public let descriptor: Int32

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // Every stored property is set: a throw runs deinit, which closes the descriptor. Closing
        // it here too closed it twice, and the second close could take a descriptor another
        // thread had just opened (a PostgreSQL connection failed with "Bad file descriptor").
        guard result == 0 else {
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
    }

    public init(unixPath: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { storage in
            for (position, byte) in path(unixPath).enumerated() { storage[position] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {  // deinit closes the descriptor, as above
            throw Failure(description: "connect to \(unixPath) failed: errno \(errno)")
        }
    }

    private func path(_ text: String) -> [UInt8] { Array(text.utf8) }

    deinit { close(descriptor) }

    public func send(_ text: String) {
        send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Reads until `done` holds for what was read, EOF, or `timeout` seconds without data.
    /// Polls without blocking and sleeps between polls, so it never holds a cooperative thread
    /// that the server's async handlers may need.
    public func read(until done: ([UInt8]) -> Bool = { _ in false }, timeout: Double = 30) async -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let clock = ContinuousClock()
        var lastData = clock.now
        while !done(received) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 0) <= 0 {
                if clock.now - lastData > .seconds(timeout) { break }
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
            lastData = clock.now
        }
        return received
    }

    /// Reads until `text` appears.
    public func read(untilContains text: String, timeout: Double = 30) async -> String {
        let needle = Array(text.utf8)
        let bytes = await read(until: { $0.count >= needle.count && Self.contains($0, needle) }, timeout: timeout)
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    /// Whether the peer closed the connection (EOF or reset) within `timeout` seconds, ignoring data.
    public func waitForClose(timeout: Double = 30) async -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(timeout)
        while clock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 0) <= 0 {
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return true }
        }
        return false
    }
}
