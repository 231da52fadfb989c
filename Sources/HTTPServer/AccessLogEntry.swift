/// One answered request, for an access log (see ``HTTPServerConfiguration/accessLog``).
///
/// ```swift
/// configuration.accessLog = { entry in logger.info("\(entry.method) \(entry.target) \(entry.status)") }
/// ```
public struct AccessLogEntry: Sendable {
    public var method: String
    public var target: String
    /// The pattern of the route that answered (`/v1/scopes/{name}/events`), nil when none matched.
    public var route: String?
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2`.
    public var version: String
    public var status: Int
    /// Body bytes of the answer (0 for an event stream, which is logged when it opens).
    public var bodyBytes: Int
    /// Whether the answer is an event stream.
    public var streamed: Bool
    /// From the complete request to the answer.
    public var duration: Duration
    /// The peer's address (`ip:port`, or the Unix socket), as the socket sees it.
    public var remoteAddress: String
    /// The request's `X-Forwarded-For` and `Forwarded` values, so a log behind a trusted proxy can
    /// name the real client (the server trusts neither; the application decides whom to believe).
    public var forwardedFor: String? = nil
    public var forwarded: String? = nil
}
