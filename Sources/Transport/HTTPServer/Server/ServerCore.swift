import HTTP1
import HTTPTypes
import Logging
import SocketLoop
import Synchronization

/// What every connection of one server shares: configuration, router, counters, per-loop caches,
/// and the optional HTTP/2 integration.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let router: Router
    let logger: Logger
    let stats = ServerStats()
    /// Request body bytes buffered by all connections (HTTP/1.1 and HTTP/2), against
    /// ``HTTPServerConfiguration/maxBufferedBodyBytes``.
    private let bufferedBodyBytes = Atomic<Int>(0)
    /// Bytes of per-request response bodies not yet written to their sockets, against
    /// ``HTTPServerConfiguration/maxUnsentBytes``.
    let unsentBudget: UnsentResponseBudget
    let parserLimits: HTTP1ParserLimits
    let dateCaches: [DateCache]
    let timeouts: HTTP1ConnectionState.Timeouts
    /// Set by the HTTP/2 integration; nil serves HTTP/1 only.
    let http2: (any HTTP2ConnectionFactory)?

    init(
        configuration: HTTPServerConfiguration, router: Router, logger: Logger,
        http2: (any HTTP2ConnectionFactory)? = nil
    ) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.http2 = http2
        unsentBudget = UnsentResponseBudget(limit: configuration.maxUnsentBytes)
        parserLimits = HTTP1ParserLimits(
            maxHeaderBytes: configuration.maxHeaderBytes, maxTargetBytes: configuration.maxTargetBytes)
        dateCaches = (0..<max(configuration.loopCount, 1)).map { _ in DateCache() }
        timeouts = HTTP1ConnectionState.Timeouts(
            headerRead: configuration.headerReadTimeout, idle: configuration.idleTimeout,
            heartbeat: configuration.heartbeatInterval, minBodyRate: configuration.minBodyBytesPerSecond)
    }

    /// Takes `count` bytes from the server-wide body budget; false (nothing taken) when they do
    /// not fit.
    func reserveBodyBytes(_ count: Int) -> Bool {
        let limit = configuration.maxBufferedBodyBytes
        let total = bufferedBodyBytes.add(count, ordering: .relaxed).newValue
        guard limit > 0, total > limit else { return true }
        bufferedBodyBytes.subtract(count, ordering: .relaxed)
        return false
    }

    /// Charges `count` body bytes that are already held (a request waiting for its turn), even
    /// past the bound: later arrivals are refused until they are released.
    func holdBodyBytes(_ count: Int) {
        bufferedBodyBytes.add(count, ordering: .relaxed)
    }

    func releaseBodyBytes(_ count: Int) {
        bufferedBodyBytes.subtract(count, ordering: .relaxed)
    }

    /// Routes a complete request from any protocol; `channel` receives the answer. `match` is the
    /// route found for its head already (``answerBeforeBody(_:channel:requestID:connection:)``).
    func handle(
        _ request: HTTPServerRequest, channel: any HTTPResponseChannel, requestID: UInt64, connection: Connection,
        match: Router.Match? = nil
    ) {
        let match = match ?? router.match(method: request.method, path: request.path)
        let context = makeContext(request, match: match, channel: channel, requestID: requestID, connection: connection)
        router.dispatch(match, request, context: context)
    }

    /// Looks at a request whose body has not been read (`request` has none): when its route is
    /// unknown, does not take its method, or will refuse it anyway (its ``BodyAdmission``), routes
    /// the bodiless request now and returns nil — the caller never reads the body and closes after
    /// the answer. Otherwise returns the route found, for ``handle(_:channel:requestID:connection:match:)``
    /// once the body is in.
    func answerBeforeBody(
        _ request: HTTPServerRequest, channel: any HTTPResponseChannel, requestID: UInt64, connection: Connection
    ) -> Router.Match? {
        let match = router.match(method: request.method, path: request.path)
        guard Self.refusesBeforeBody(request, match: match) else { return match }
        let context = makeContext(request, match: match, channel: channel, requestID: requestID, connection: connection)
        router.dispatch(match, request, context: context)
        return nil
    }

    /// Whether a request whose body has not been read will be refused from its head alone (the
    /// HTTP/2 session asks this before it buffers a body; the refused request is routed bodiless).
    func refusesBeforeBody(_ request: HTTPServerRequest) -> Bool {
        Self.refusesBeforeBody(request, match: router.match(method: request.method, path: request.path))
    }

    private static func refusesBeforeBody(_ request: HTTPServerRequest, match: Router.Match) -> Bool {
        guard case .found(let route, let parameters) = match else { return true }
        guard let admit = route.admitBody else { return false }
        return admit(request, parameters)
    }

    private func makeContext(
        _ request: HTTPServerRequest, match: Router.Match, channel: any HTTPResponseChannel, requestID: UInt64,
        connection: Connection
    ) -> HTTPRequestContext {
        stats.requests.add(1, ordering: .relaxed)
        var onAnswer: (@Sendable (HTTPResponse.Status, Int, Bool) -> Void)?
        if let accessLog = configuration.accessLog {
            let started = ContinuousClock.now
            let method = request.method.rawValue
            let target = AccessLogEntry.redact(
                target: request.target, parameters: configuration.redactedQueryParameters)
            let version = request.version
            let remoteAddress = connection.remoteAddress
            let forwardedFor = request.headerFields.value(of: Self.xForwardedFor)
            let forwarded = request.headerFields.value(of: Self.forwarded)
            let route = match.route
            onAnswer = { status, bytes, streamed in
                accessLog(
                    AccessLogEntry(
                        method: method, target: target, route: route, version: version, status: status.code,
                        bodyBytes: bytes,
                        streamed: streamed, duration: ContinuousClock.now - started, remoteAddress: remoteAddress,
                        forwardedFor: forwardedFor, forwarded: forwarded))
            }
        }
        let responder = HTTPResponder(
            channel: channel, loop: connection.loop, requestID: requestID, renderError: configuration.errorResponse,
            onAnswer: onAnswer, unsentBudget: unsentBudget,
            mayRefuseWhenBusy: request.method == .get || request.method == .head)
        return HTTPRequestContext(logger: logger, remoteAddress: connection.remoteAddress, responder: responder)
    }

    /// Counts a request answered before routing and gives it an access-log line with the reason:
    /// a smuggling attempt or a flood of bad heads is seen, not only answered.
    func recordRejection(
        status: Int, reason: String, bodyBytes: Int, connection: Connection, version: String = "HTTP/1.1"
    ) {
        stats.rejected.add(1, ordering: .relaxed)
        guard let accessLog = configuration.accessLog else { return }
        accessLog(
            AccessLogEntry(
                method: "-", target: "-", route: nil, version: version, status: status, bodyBytes: bodyBytes,
                streamed: false, duration: .zero, remoteAddress: connection.remoteAddress, rejection: reason))
    }

    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!

    func dateCache(for loop: EventLoop) -> DateCache {
        dateCaches[loop.index % dateCaches.count]
    }
}

/// The seam for HTTP/2 (cleartext, same port). The HTTP/1 handler calls it when a connection
/// starts with the client preface (`PRI * HTTP/2.0…`, prior knowledge) or a request asks for
/// `Upgrade: h2c`; the returned handler takes over the socket with
/// ``SocketLoop/Connection/replaceHandler(with:replaying:)``. The HTTP/2 handler feeds requests
/// to ``ServerCore/handle(_:channel:requestID:connection:)`` and implements ``HTTPResponseChannel``
/// per stream, so handlers, responders and event streams work unchanged.
protocol HTTP2ConnectionFactory: Sendable {
    /// The connection began with the HTTP/2 preface; `bytes` (not yet consumed, starting with the
    /// preface) are replayed into the returned handler.
    func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler

    /// `request` asked `Upgrade: h2c` with `HTTP2-Settings: settings`. Return nil to decline (the
    /// request is then served over HTTP/1.1), or a handler that writes `101 Switching Protocols`
    /// and answers `request` as stream 1.
    func makeUpgradeHandler(
        connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
    ) -> (any ConnectionHandler)?
}

/// Cleartext HTTP/2 on the HTTP/1 port: prior knowledge (the client starts with the preface) and
/// `Upgrade: h2c`. Set as ``ServerCore/http2``; the HTTP/1 handler calls it.
///
/// ```swift
/// let core = ServerCore(configuration: configuration, router: router, logger: logger, http2: H2CConnectionFactory())
/// ```
struct H2CConnectionFactory: HTTP2ConnectionFactory {
    func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler {
        HTTP2ConnectionHandler(connection: connection, core: core)
    }

    func makeUpgradeHandler(
        connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
    ) -> (any ConnectionHandler)? {
        // A request body already read over HTTP/1.1 travels with the request as stream 1's body.
        HTTP2ConnectionHandler(connection: connection, core: core, upgrade: (request, settings))
    }
}
