internal import CNGHTTP2

/// A failure reported by nghttp2, with the operation and nghttp2's own explanation.
///
/// A failed ``HTTP2ServerSession/receive(_:)`` means the peer broke the protocol badly enough
/// that the connection must close: send what ``HTTP2ServerSession/drainOutput(into:limit:)``
/// still produces (often a GOAWAY naming the error), then close the socket.
public struct HTTP2SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the server was doing, e.g. "nghttp2_session_mem_recv".
    public let operation: String
    /// nghttp2's negative error code (`NGHTTP2_ERR_*`).
    public let code: Int32
    /// Extra context, e.g. the settings header that failed to decode.
    public let detail: String

    init(_ operation: String, code: Int32, detail: String = "") {
        self.operation = operation
        self.code = code
        self.detail = detail
    }

    public var description: String {
        let reason = String(cString: nghttp2_strerror(code))
        return "\(operation) failed: \(reason) (\(code))" + (detail.isEmpty ? "" : ": \(detail)")
    }
}
