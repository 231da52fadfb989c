import HTTP2
import HTTPTypes
import Logging
import SocketLoop

/// Serves HTTP/2 (h2c) on one connection: feeds the socket's bytes to an ``HTTP2ServerSession``,
/// routes each complete request through ``ServerCore/handle(_:channel:requestID:loop:)`` and
/// implements ``HTTPResponseChannel`` per stream, so handlers, responders and event streams work
/// as on HTTP/1. Confined to the connection's loop thread.
///
/// Each stream with a complete request is one ``HTTP2StreamRecord`` in ``table``; when nghttp2
/// reports the stream closed its record is removed and released in one place (``release(_:)``).
/// Requests and their routing are in `+Requests`, answers in `+Responses`, back-pressure in
/// `+Bounds`, timeouts in `+Deadlines`.
///
/// Output goes from nghttp2 to the connection in slices; when the kernel pushes back, copying
/// stops until ``connectionDidDrain(_:)``, so a slow client holds at most one slice plus its
/// streams' capped queues (``HTTP2Configuration/maxPendingBytesPerStream``).
final class HTTP2ConnectionHandler: ConnectionHandler, HTTPResponseChannel, @unchecked Sendable {
    let connection: Connection
    let core: ServerCore
    let date: DateCache
    let session: HTTP2ServerSession?
    var state: HTTP2ConnectionState
    /// An `Upgrade: h2c` request to answer as stream 1 once the handler takes over.
    private var upgrade: (request: HTTPServerRequest, settings: String)?

    /// The streams with a complete request, until nghttp2 reports them closed.
    var table = HTTP2StreamTable()
    /// Header, body, preface, send and after-GOAWAY deadlines (the HTTP/1.1 ones, for HTTP/2).
    var requestDeadlines: HTTP2RequestDeadlines
    var isDispatchingWaiting = false
    /// When the responses waiting for window were last looked at (once per loop wake-up).
    var sendingCheckedAt: LoopInstant?
    /// The HTTP version an upgraded request (stream 1) arrived with.
    var upgradedVersion: String?
    private var isFlushing = false
    private var needsFlush = false

    /// nghttp2 output copied to the connection per step, and the queue size that makes the
    /// handler hand it to the kernel before copying more.
    static let outputSlice = 64 * 1024
    static let outputHighWater = 256 * 1024

    init(connection: Connection, core: ServerCore, upgrade: (request: HTTPServerRequest, settings: String)? = nil) {
        self.connection = connection
        self.core = core
        self.upgrade = upgrade
        date = core.dateCache(for: connection.loop)
        session = try? HTTP2ServerSession(configuration: Self.sessionConfiguration(core.configuration))
        session?.bodyBudget = core
        // The session's own refusals are the server's errors (problem+json in the gateway),
        // logged and counted like HTTP/1.1's.
        session?.renderRejection = { [core, connection] status, message, reason in
            var rendered = core.configuration.errorResponse(status, message)
            if status == .serviceUnavailable { rendered.head.headerFields[.retryAfter] = "1" }
            core.recordRejection(
                status: Int(status.code), reason: reason, bodyBytes: rendered.bodyCount, connection: connection,
                version: "HTTP/2")
            return (rendered.head, rendered.sharedBody?.array ?? rendered.body)
        }
        // A body is read only when its request may succeed (the HTTP/1.1 rule, `answerBeforeBody`).
        session?.admitsBody = { [core] head in !Self.isRefused(head, core: core) }
        state = HTTP2ConnectionState(
            idleTimeout: core.timeouts.idle, heartbeatInterval: core.timeouts.heartbeat, now: connection.loop.now)
        requestDeadlines = HTTP2RequestDeadlines(
            headerTimeout: core.timeouts.headerRead, bodyTimeout: core.timeouts.idle, now: connection.loop.now)
        requestDeadlines.minBodyRate = core.timeouts.minBodyRate
    }

    static func sessionConfiguration(_ configuration: HTTPServerConfiguration) -> HTTP2Configuration {
        var settings = HTTP2Configuration()
        settings.maxRequestBodySize = configuration.maxBodyBytes
        settings.maxHeaderListSize = UInt32(clamping: configuration.maxHeaderBytes)
        settings.maxPendingBytesPerStream = min(configuration.maxPendingBytes, 256 * 1024)
        return settings
    }

    // MARK: ConnectionHandler

    func connectionDidOpen(_ connection: Connection) {
        guard let session else {
            core.logger.error("HTTP/2 session could not be created; closing the connection")
            connection.close()
            return
        }
        if let upgrade {
            self.upgrade = nil
            connection.write(Self.switchingProtocols)
            var request = upgrade.request
            upgradedVersion = request.version
            if request.head.scheme == nil { request.head.scheme = "http" }
            do {
                try session.upgrade(settingsHeader: upgrade.settings, request: request.head, body: request.body)
            } catch {
                core.logger.debug("h2c upgrade failed: \(error)")
                connection.close()
                return
            }
        }
        processEvents()
        flush()
    }

    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
        guard let session else { return }
        do {
            try session.receive(bytes)
        } catch {
            core.logger.debug("HTTP/2 connection error: \(error)")
            processEvents()
            flush()
            connection.closeAfterFlush()
            return
        }
        processEvents()
        flush()
    }

    func connectionDidReadEOF(_ connection: Connection) {
        connection.closeAfterFlush()
    }

    func connectionDidDrain(_ connection: Connection) {
        flush()
    }

    func connectionExceededPendingLimit(_ connection: Connection) {
        // Bounded by design: output is copied from nghttp2 only while the kernel keeps up, and
        // each stream's queue is capped (a slow event stream is reset, see HTTP2EventStreamSink).
    }

    func connectionShouldQuiesce(_ connection: Connection) {
        guard let session else { return connection.close() }
        session.beginGracefulShutdown()
        requestDeadlines.wentAway(now: connection.loop.now)
        // Over a copy of the records: ending a stream may close it (and remove its record).
        for record in table.records.values { record.sink?.end() }
        flush()
    }

    func connectionDidClose(_ connection: Connection) {
        // Every record goes before any event stream's callbacks run.
        let closed = table
        table = HTTP2StreamTable()
        for record in closed.records.values { release(record) }
    }

    /// Gives back what a removed stream held: a waiting body's charge on the server-wide body
    /// budget, and its event stream (finished: counted closed, its callbacks run).
    func release(_ record: HTTP2StreamRecord) {
        if case .waiting(let request) = record.phase { core.releaseBodyBytes(request.body.count) }
        record.sink?.finish()
    }

    // MARK: Writing the session

    /// Copies nghttp2's output to the connection until it has nothing more or the kernel pushes
    /// back; closes the connection once the session is finished (GOAWAY done, or fatal error).
    func flush() {
        guard let session, !connection.isClosed else { return }
        if isFlushing {
            needsFlush = true
            return
        }
        isFlushing = true
        defer { isFlushing = false }
        repeat {
            needsFlush = false
            while !connection.isWriteBlocked {
                var buffer: [UInt8] = []
                let count: Int
                do {
                    count = try session.drainOutput(into: &buffer, limit: Self.outputSlice)
                } catch {
                    // Only out-of-memory or a broken data source gets here: the session is unusable.
                    core.logger.error("HTTP/2 output failed: \(error)")
                    connection.close()
                    return
                }
                guard count > 0 else { break }
                connection.write(buffer)
                if connection.pendingBytes > Self.outputHighWater { connection.flushNow() }
            }
            processEvents()
        } while needsFlush
        if session.isFinished { connection.closeAfterFlush() }
    }

    private static let switchingProtocols = Array(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".utf8)
}

extension ServerCore: HTTP2BodyBudget {}
