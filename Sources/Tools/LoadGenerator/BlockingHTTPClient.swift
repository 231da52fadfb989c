import CLinuxIO
import Glibc

/// One request at a time on a fresh blocking connection with a receive timeout: the set-up steps
/// (create a scope, read its version) before a run, where simplicity beats speed.
public struct BlockingHTTPClient: Sendable {
    public struct Response: Sendable {
        public var head: HTTPResponseHead
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public enum Failure: Error, CustomStringConvertible {
        case transport(String)

        public var description: String {
            switch self {
            case .transport(let message): message
            }
        }
    }

    public let target: BenchTarget
    public let timeoutSeconds: Int

    public init(target: BenchTarget, timeoutSeconds: Int = 30) {
        self.target = target
        self.timeoutSeconds = timeoutSeconds
    }

    /// Sends `method path` with an optional JSON body and returns the whole response.
    public func request(
        _ method: String, _ path: String, json body: String? = nil, headers: [(String, String)] = []
    ) throws -> Response {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure.transport("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = target.connect(descriptor)
        guard connected == 0 else {
            throw Failure.transport("cannot connect to \(target): \(String(cString: strerror(errno)))")
        }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(target.authority)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if let body {
            request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        } else {
            request += "\r\n"
        }
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + sent, $0.count - sent) }
            guard count > 0 else { throw Failure.transport("write to \(target): \(String(cString: strerror(errno)))") }
            sent += count
        }
        var parser = HTTPResponseParser()
        var head: HTTPResponseHead?
        var body: [UInt8] = []
        var done = false
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !done {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                throw Failure.transport("\(method) \(path): no complete answer within \(timeoutSeconds) s")
            }
            let handle: (HTTPResponseParser.Event) -> Void = { event in
                switch event {
                case .head(let parsed): head = parsed
                case .body(let chunk): body.append(contentsOf: chunk)
                case .end: done = true
                }
            }
            if count == 0 {
                parser.finish(handle)
                guard done else { throw Failure.transport("\(method) \(path): connection closed mid-response") }
                break
            }
            do {
                try buffer.withUnsafeBytes {
                    try parser.consume(UnsafeRawBufferPointer(rebasing: $0[0..<count]), handle)
                }
            } catch {
                throw Failure.transport("\(method) \(path): \(error)")
            }
        }
        guard let head else { throw Failure.transport("\(method) \(path): no response head") }
        return Response(head: head, body: body)
    }
}
