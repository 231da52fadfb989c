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
        parserLimits = HTTP1ParserLimits(
            maxHeaderBytes: configuration.maxHeaderBytes, maxTargetBytes: configuration.maxTargetBytes)
        dateCaches = (0..<max(configuration.loopCount, 1)).map { _ in DateCache() }
        timeouts = HTTP1ConnectionState.Timeouts(
            headerRead: configuration.headerReadTimeout, idle: configuration.idleTimeout,
            heartbeat: configuration.heartbeatInterval)
    }

    /// Routes a complete request from any protocol; `channel` receives the answer.
    func handle(
        _ request: HTTPServerRequest, channel: any HTTPResponseChannel, requestID: UInt64, connection: Connection
    ) {
        stats.requests.add(1, ordering: .relaxed)
        let match = router.match(method: request.method, path: request.path)
        var onAnswer: (@Sendable (HTTPResponse.Status, Int, Bool) -> Void)?
        if let accessLog = configuration.accessLog {
            let started = ContinuousClock.now
            let method = request.method.rawValue
            let target = request.target
            let version = request.version
            let remoteAddress = connection.remoteAddress
            let forwardedFor = request.headerFields[Self.xForwardedFor]
            let forwarded = request.headerFields[Self.forwarded]
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
            onAnswer: onAnswer)
        let context = HTTPRequestContext(
            logger: logger, remoteAddress: connection.remoteAddress, responder: responder)
        router.dispatch(match, request, context: context)
    }

    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!

    func dateCache(for loop: EventLoop) -> DateCache {
        dateCaches[loop.index % dateCaches.count]
    }
}
