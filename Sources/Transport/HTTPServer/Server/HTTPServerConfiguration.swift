import HTTPTypes
import SocketLoop

/// Everything an ``HTTPServer`` needs to listen and the limits it enforces. Defaults follow
/// docs/gateway.md: body 1 MiB, headers 16 KiB, header read timeout 10 s, keep-alive idle 60 s,
/// heartbeat 15 s, unsent SSE data 1 MiB.
///
/// ```swift
/// var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "::", port: 8080)])
/// configuration.maxBodyBytes = 4 << 20
/// ```
public struct HTTPServerConfiguration: Sendable {
    /// Where to accept connections (TCP on IPv4/IPv6, or a Unix socket for a local proxy).
    public var addresses: [ListenAddress]
    /// Event-loop threads; default one per core.
    public var loopCount: Int
    /// The largest request body accepted (413 beyond it).
    public var maxBodyBytes: Int
    /// The largest request head: request line plus headers (431 beyond it).
    public var maxHeaderBytes: Int
    /// The longest request target (414 beyond it).
    public var maxTargetBytes: Int
    /// Time allowed to receive a whole request head once it has begun (slowloris guard; 408).
    public var headerReadTimeout: Duration
    /// Time an idle keep-alive connection stays open; also the longest pause inside a body.
    public var idleTimeout: Duration
    /// Bytes per second a request body must average after a grace of ``headerReadTimeout``
    /// (408 on HTTP/1.1, the stream reset on HTTP/2); 0 for no minimum. At 1024, a 1 MiB body may
    /// take about 17 minutes; one byte every few seconds is cut off after the grace.
    public var minBodyBytesPerSecond: Int = 1024
    /// Interval of `: keep-alive` comments on otherwise quiet event streams.
    public var heartbeatInterval: Duration
    /// Unsent bytes per connection; an event stream over it is dropped as a slow subscriber.
    public var maxPendingBytes: Int
    /// Open connections at most; one beyond it is closed as it is accepted. 0: only the
    /// descriptor limit bounds them.
    public var maxConnections: Int = 0
    /// Request body bytes all connections (HTTP/1.1 and HTTP/2) may hold at once while bodies
    /// arrive; the request whose bytes do not fit is answered 503 (an HTTP/1.1 connection is then
    /// closed). 0: no bound.
    public var maxBufferedBodyBytes: Int = 256 << 20
    /// Response bytes made for one request (bodies of 16 KiB or more; not shared buffers such as
    /// a cached state) that all connections may hold unsent at once. The answer to a GET or HEAD
    /// that does not fit is 503 with `Retry-After` instead; other answers (their request already
    /// acted) are charged past it. An HTTP/2 connection also takes no new request while more than
    /// ``maxPendingBytes`` of its own responses wait unsent. 0: no bound.
    public var maxUnsentBytes: Int = 256 << 20
    /// The last event written to a stream dropped as a slow subscriber, past the cap (once), before
    /// the stream ends and the connection closes (once written, or after the linger timeout if
    /// the peer never reads it). It carries no `id`, so the client's `Last-Event-ID` stays the
    /// last event it received. nil drops the stream without it.
    ///
    /// ```swift
    /// configuration.slowSubscriberEvent = SSEEvent(event: "error", data: #"{"type":"slow"}"#).encoded()
    /// ```
    public var slowSubscriberEvent: EncodedEvent?
    /// Time allowed for in-flight work after a shutdown begins; then connections are closed.
    public var gracePeriod: Duration
    /// An optional `Server` header value.
    public var serverName: String?
    /// Renders the engine's own error answers (malformed requests, limits, timeouts, unknown routes,
    /// handler failures) from a status and a reason; the default is plain text. An API can answer
    /// with its own error format, e.g. RFC 9457 problem+json.
    public var errorResponse: @Sendable (HTTPResponse.Status, String) -> HTTPServerResponse
    /// Called once per answered request, on the loop thread (an access log).
    public var accessLog: (@Sendable (AccessLogEntry) -> Void)?
    /// Query parameters whose values never reach ``AccessLogEntry/target`` (credentials sent in
    /// the URL, such as an EventSource client's `?access_token=`): logged as `REDACTED`.
    public var redactedQueryParameters: Set<String> = ["access_token"]
    /// Adds or changes header fields of every response, streamed or not, just before it is
    /// encoded (for example CORS headers that depend on the request's `Origin`).
    ///
    /// ```swift
    /// configuration.responseHeaders = { request, fields in fields[.vary] = "Origin" }
    /// ```
    public var responseHeaders: (@Sendable (HTTPServerRequest, inout HTTPFields) -> Void)?

    public init(
        addresses: [ListenAddress] = [.tcp(host: "127.0.0.1", port: 8080)],
        loopCount: Int = SocketServerConfiguration.coreCount
    ) {
        self.addresses = addresses
        self.loopCount = loopCount
        maxBodyBytes = 1 << 20
        maxHeaderBytes = 16 * 1024
        maxTargetBytes = 8 * 1024
        headerReadTimeout = .seconds(10)
        idleTimeout = .seconds(60)
        heartbeatInterval = .seconds(15)
        maxPendingBytes = 1 << 20
        slowSubscriberEvent = Self.defaultSlowSubscriberEvent
        gracePeriod = .seconds(10)
        serverName = nil
        errorResponse = { status, reason in HTTPError(status, reason).response }
        accessLog = nil
        responseHeaders = nil
    }

    /// `event: error` with a problem+json-shaped body telling the client to reconnect.
    public static let defaultSlowSubscriberEvent = SSEEvent(
        event: "error",
        data: #"{"type":"about:blank","title":"Subscriber too slow","status":429,"#
            + #""detail":"too much unsent data waited for this stream; reconnect with Last-Event-ID"}"#
    ).encoded()
}

/// One answered request, for an access log (see ``HTTPServerConfiguration/accessLog``).
///
/// ```swift
/// configuration.accessLog = { entry in logger.info("\(entry.method) \(entry.target) \(entry.status)") }
/// ```
public struct AccessLogEntry: Sendable {
    public var method: String
    /// The request target, with the values of credential query parameters replaced by
    /// `REDACTED` (``HTTPServerConfiguration/redactedQueryParameters``).
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
    /// Why the request was answered before routing (`"bare LF in header section"`, `"request not
    /// received in time"`); nil for a routed request. `method` and `target` are `-` then.
    public var rejection: String? = nil
}

extension AccessLogEntry {
    /// `target` with the value of every query parameter named in `parameters` replaced by
    /// `REDACTED`, so a token in the URL never reaches a log. Names compare after percent-decoding,
    /// so `access%5Ftoken=` is caught too; the rest of the target is kept byte for byte.
    ///
    /// ```swift
    /// AccessLogEntry.redact(target: "/events?access_token=eyJ…&x=1", parameters: ["access_token"])
    /// // "/events?access_token=REDACTED&x=1"
    /// ```
    public static func redact(target: String, parameters: Set<String>) -> String {
        // A UTF-8 scan: `?` is ASCII, and a Character walk is what every request would pay here.
        guard !parameters.isEmpty, let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target }
        let query = target[target.index(after: question)...]
        var changed = false
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> Substring in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let decoded = PercentDecoding.decode(String(name), plusAsSpace: true)
            guard parameters.contains(decoded) else { return pair }
            changed = true
            return Substring(name + "=REDACTED")
        }
        guard changed else { return target }
        return String(target[...question]) + pairs.joined(separator: "&")
    }
}
