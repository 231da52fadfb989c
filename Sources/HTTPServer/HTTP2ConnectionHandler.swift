import HTTP2
import HTTPTypes
import Logging
import SocketLoop
import Synchronization

/// Serves HTTP/2 (h2c) on one connection: feeds the socket's bytes to an ``HTTP2ServerSession``,
/// routes each complete request through ``ServerCore/handle(_:channel:requestID:loop:)`` and
/// implements ``HTTPResponseChannel`` per stream, so handlers, responders and event streams work
/// as on HTTP/1. Confined to the connection's loop thread.
///
/// Output goes from nghttp2 to the connection in slices; when the kernel pushes back, copying
/// stops until ``connectionDidDrain(_:)``, so a slow client holds at most one slice plus its
/// streams' capped queues (``HTTP2Configuration/maxPendingBytesPerStream``).
final class HTTP2ConnectionHandler: ConnectionHandler, HTTPResponseChannel, @unchecked Sendable {
    /// A request handed to the router and not answered yet, or an open event stream.
    struct ActiveRequest {
        let stream: HTTP2StreamID
        let request: HTTPServerRequest
    }

    let connection: Connection
    let core: ServerCore
    let date: DateCache
    let session: HTTP2ServerSession?
    var state: HTTP2ConnectionState
    /// An `Upgrade: h2c` request to answer as stream 1 once the handler takes over.
    private var upgrade: (request: HTTPServerRequest, settings: String)?

    var active: [UInt64: ActiveRequest] = [:]
    var requestIDs: [HTTP2StreamID: UInt64] = [:]
    var sinks: [HTTP2StreamID: HTTP2EventStreamSink] = [:]
    /// Event streams ended as slow subscribers, reset if still open at their instant.
    var slowStreamDeadlines: [HTTP2StreamID: LoopInstant] = [:]
    /// Header, body, preface, send and after-GOAWAY deadlines (the HTTP/1.1 ones, for HTTP/2).
    var requestDeadlines: HTTP2RequestDeadlines
    /// Complete requests not yet routed because this connection's responses wait unsent beyond
    /// ``HTTPServerConfiguration/maxPendingBytes`` (see ``dispatchWaiting()``), oldest first.
    /// Their bodies stay charged to the server-wide body budget until they are routed.
    var waiting: [(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8])] = []
    /// Body bytes of the `waiting` requests (bounded like unfinished uploads, per connection).
    var waitingBodyBytes = 0
    private var isDispatchingWaiting = false
    /// Streams answered with a cached shared body (a scope's state): queued, but costing this
    /// connection no memory of its own, so they do not back it up.
    var cachedBodyStreams: Set<HTTP2StreamID> = []
    /// When the responses waiting for window were last looked at (once per loop wake-up).
    private var sendingCheckedAt: LoopInstant?
    private var nextRequestID: UInt64 = 0
    /// The HTTP version an upgraded request (stream 1) arrived with.
    private var upgradedVersion: String?
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

    func connection(_ connection: Connection, deadlinePassed now: LoopInstant) {
        let expired = slowStreamDeadlines.filter { $0.value <= now }.map(\.key)
        if !expired.isEmpty, let session {
            for stream in expired {
                slowStreamDeadlines[stream] = nil
                session.reset(stream, errorCode: .cancel)
            }
            flush()
        }
        if let session { requestDeadlines.trackSending(session.queuedResponses, now: now) }
        switch requestDeadlines.expired(now: now) {
        case .none:
            break
        case .close:
            return connection.close()
        case .endConnection:
            // A header block left unfinished holds the whole connection: end it (slowloris).
            session?.terminate(errorCode: .enhanceYourCalm)
            flush()
            return connection.closeAfterFlush()
        case .resetStreams(let streams):
            for stream in streams { session?.reset(stream, errorCode: .cancel) }
            flush()
        }
        switch state.deadlinePassed(now: now) {
        case .none:
            break
        case .goAway:
            session?.beginGracefulShutdown()
            requestDeadlines.wentAway(now: now)
            flush()
        case .heartbeat:
            for sink in sinks.values { sink.write(EncodedEvent.heartbeat) }
        }
        connection.deadline = nextDeadline
    }

    func connectionExceededPendingLimit(_ connection: Connection) {
        // Bounded by design: output is copied from nghttp2 only while the kernel keeps up, and
        // each stream's queue is capped (a slow event stream is reset, see HTTP2EventStreamSink).
    }

    func connectionShouldQuiesce(_ connection: Connection) {
        guard let session else { return connection.close() }
        session.beginGracefulShutdown()
        requestDeadlines.wentAway(now: connection.loop.now)
        for sink in Array(sinks.values) { sink.end() }
        flush()
    }

    func connectionDidClose(_ connection: Connection) {
        let open = Array(sinks.values)
        sinks = [:]
        active = [:]
        requestIDs = [:]
        core.releaseBodyBytes(waitingBodyBytes)
        waiting = []
        waitingBodyBytes = 0
        for sink in open { sink.finish() }
    }

    // MARK: Session plumbing

    /// Acts on what the session reported: routes requests, releases closed streams.
    func processEvents() {
        guard let session else { return }
        let events = session.takeEvents()
        guard !events.isEmpty else {
            if !waiting.isEmpty { dispatchWaiting() }
            return updateDeadline()
        }
        // A request whose stream the client already reset in the same read (rapid reset) is not
        // worth starting: skipping it keeps an attacker from making the server work per reset.
        var resetInThisBatch: Set<HTTP2StreamID> = []
        for case .streamClosed(let stream, let code) in events where code != .noError {
            resetInThisBatch.insert(stream)
        }
        for event in events {
            switch event {
            case .request(let stream, _, _) where resetInThisBatch.contains(stream) || connection.isClosed:
                break
            case .request(let stream, let head, let body)
            where (!waiting.isEmpty || isBackedUp) && !Self.isRefused(head, core: core):
                // Back-pressure: this connection's earlier responses are not taken yet.
                wait(stream: stream, head: head, body: body)
            case .request(let stream, let head, let body):
                dispatch(stream: stream, head: head, body: body)
            case .streamClosed(let stream, _):
                cachedBodyStreams.remove(stream)
                if let index = waiting.firstIndex(where: { $0.stream == stream }) {
                    let dropped = waiting.remove(at: index).body.count
                    waitingBodyBytes -= dropped
                    core.releaseBodyBytes(dropped)
                }
                slowStreamDeadlines[stream] = nil
                if let requestID = requestIDs.removeValue(forKey: stream) { active[requestID] = nil }
                sinks.removeValue(forKey: stream)?.finish()
            case .goAway:
                break
            }
        }
        if !waiting.isEmpty { dispatchWaiting() }
        updateDeadline()
    }

    /// Whether this connection's own responses wait unsent beyond its share
    /// (``HTTPServerConfiguration/maxPendingBytes``): new requests wait until the client reads.
    /// Cached shared bodies do not count; they cost the connection nothing.
    var isBackedUp: Bool {
        guard let session else { return false }
        var queued = session.queuedResponseBytes
        for stream in cachedBodyStreams { queued -= session.pendingBytes(on: stream) }
        return queued > core.configuration.maxPendingBytes
    }

    /// Whether a request is refused from its head alone: its body is not read, and it is
    /// answered at once, backed up or not (its answer is small).
    private static func isRefused(_ head: HTTPRequest, core: ServerCore) -> Bool {
        core.refusesBeforeBody(HTTPServerRequest(head: head, body: [], version: "HTTP/2"))
    }

    /// Queues a request behind this connection's unsent responses, its body charged to the
    /// server-wide body budget; beyond the connection's bound for unfinished uploads the stream
    /// is refused (REFUSED_STREAM: the client may retry it).
    private func wait(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8]) {
        let bound = session?.configuration.maxBufferedRequestBytes ?? 0
        guard waitingBodyBytes + body.count <= bound else {
            session?.reset(stream, errorCode: .refusedStream)
            return
        }
        core.holdBodyBytes(body.count)
        waitingBodyBytes += body.count
        waiting.append((stream, head, body))
    }

    /// Routes waiting requests, oldest first, while the connection is not backed up.
    func dispatchWaiting() {
        guard !isDispatchingWaiting else { return }
        isDispatchingWaiting = true
        defer { isDispatchingWaiting = false }
        while !waiting.isEmpty, !isBackedUp, !connection.isClosed {
            let next = waiting.removeFirst()
            waitingBodyBytes -= next.body.count
            core.releaseBodyBytes(next.body.count)
            dispatch(stream: next.stream, head: next.head, body: next.body)
        }
    }

    private func dispatch(stream: HTTP2StreamID, head: HTTPRequest, body: [UInt8]) {
        nextRequestID &+= 1
        let requestID = nextRequestID
        var version = "HTTP/2"
        if stream == HTTP2StreamID(1), let upgradedVersion {
            version = upgradedVersion
            self.upgradedVersion = nil
        }
        let request = HTTPServerRequest(head: head, body: body, version: version)
        active[requestID] = ActiveRequest(stream: stream, request: request)
        requestIDs[stream] = requestID
        core.handle(request, channel: self, requestID: requestID, connection: connection)
    }

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

    func updateDeadline() {
        let now = connection.loop.now
        let arriving = session?.arrivingRequests ?? []
        // A request still arriving is activity: the connection does not go idle under an upload
        // (its pieces have their own deadline).
        state.update(
            activeStreams: requestIDs.count + arriving.count + waiting.count, eventStreams: sinks.count, now: now)
        if let session {
            requestDeadlines.track(arriving, prefaceDone: session.hasReceivedFrame, now: now)
            if sendingCheckedAt != now {
                // Once per wake-up: many events in one iteration need not rescan lagging streams
                // (the deadline handler looks again before it resets anything).
                sendingCheckedAt = now
                requestDeadlines.trackSending(session.queuedResponses, now: now)
            }
        }
        connection.deadline = nextDeadline
    }

    /// The earliest of the state's deadline, the first slow stream's reset and the request
    /// deadlines.
    private var nextDeadline: LoopInstant? {
        [state.deadline, slowStreamDeadlines.values.min(), requestDeadlines.deadline].compactMap { $0 }.min()
    }

    /// Resets `stream` (CANCEL) at `instant` unless it has closed by then.
    func resetUnlessClosed(_ stream: HTTP2StreamID, at instant: LoopInstant) {
        slowStreamDeadlines[stream] = instant
        connection.deadline = nextDeadline
    }

    private static let switchingProtocols = Array(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".utf8)
}

extension SharedBytes: HTTP2SharedBody {}

extension ServerCore: HTTP2BodyBudget {}

// MARK: HTTPResponseChannel

extension HTTP2ConnectionHandler {
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64) {
        guard let session, let request = active.removeValue(forKey: requestID) else { return }
        var response = response
        ResponseFinalizer.finalize(&response, for: request.request, core: core, date: date)
        let status = response.head.status.code
        if (100...199).contains(status) || status == 204 || status == 304 {
            response.body = []
            response.sharedBody = nil
        }
        let isCached = response.sharedBody != nil
        ResponseFinalizer.shareChargedBody(&response, sendsBody: request.request.method != .head)
        if let shared = response.sharedBody {
            // Queued by reference: the one shared copy (a cached state, or a charged large body).
            session.respond(to: request.stream, with: response.head, sharedBody: shared)
            if isCached { cachedBodyStreams.insert(request.stream) }
        } else {
            session.respond(to: request.stream, with: response.head, body: response.body)
        }
        flush()
    }

    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool {
        guard let session, let request = active[requestID] else { return false }
        var head = head
        ResponseFinalizer.finalizeStreamHead(&head, for: request.request, core: core, date: date)
        if request.request.method == .head {
            deliver(HTTPServerResponse(status: head.status, headerFields: head.headerFields), for: requestID)
            return false
        }
        let compressor = ResponseCompression.negotiateEventStream(&head, for: request.request)
        guard session.startStream(request.stream, with: head) else { return false }
        let sink = HTTP2EventStreamSink(handler: self, streamID: request.stream, stream: stream, compressor: compressor)
        sinks[request.stream] = sink
        stream.attach(sink)
        core.stats.openStreams.add(1, ordering: .relaxed)
        updateDeadline()
        flush()
        return true
    }
}
