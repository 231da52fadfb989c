import CLinuxIO
import Glibc

/// A failed system call, with the errno it left and what the server was doing.
public struct SocketError: Error, Sendable, CustomStringConvertible {
    /// The operation that failed, for example `"bind 127.0.0.1:8080"`.
    public var operation: String
    /// The `errno` value.
    public var code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// Captures the current `errno` for `operation`.
    static func lastError(_ operation: String) -> SocketError {
        SocketError(operation: operation, code: errno)
    }

    public var description: String {
        let message = strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        return "\(operation) failed: \(message) (errno \(code))"
    }
}
