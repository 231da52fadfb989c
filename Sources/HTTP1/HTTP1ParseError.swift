/// Why a request was rejected: the status to answer with (the connection is then closed) and a
/// short reason naming what is wrong, suitable for the response body and the log.
public struct HTTP1ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The response status: 400, 413, 414, 417, 431, 501 or 505.
    public var status: Int
    /// What is wrong, for example `"bare LF in header section"`.
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status) \(reason)" }

    static func bad(_ reason: String) -> HTTP1ParseError { HTTP1ParseError(status: 400, reason: reason) }
    static let headersTooLarge = HTTP1ParseError(status: 431, reason: "request header section too large")
    static let targetTooLong = HTTP1ParseError(status: 414, reason: "request target too long")
}
