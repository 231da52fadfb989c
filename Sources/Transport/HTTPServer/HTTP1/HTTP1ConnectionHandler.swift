import HTTP1
import HTTPTypes
import SocketLoop
import Synchronization

/// Serves HTTP/1.0 and HTTP/1.1 on one connection: parses requests (pipelined requests are
/// answered in order, one at a time), reads bodies, hands complete requests to the router and
/// encodes responses and event streams. Confined to the connection's loop thread.
final class HTTP1ConnectionHandler: ConnectionHandler, HTTPResponseChannel, @unchecked Sendable {
    let connection: Connection
    let core: ServerCore
    let date: DateCache
    var state: HTTP1ConnectionState

    /// Received bytes not yet consumed, from `inputStart`.
    var input: [UInt8] = []
    var inputStart = 0
    /// Bytes of the current request head already parsed as incomplete: the next parse searches
    /// only what arrived after them (a dribbled head is not scanned again from its first byte).
    var headBytesScanned = 0
    var isProcessing = false
    var isWaitingForDrain = false
    var isFirstRequest = true
    var requestID: UInt64 = 0
    var current: CurrentRequest?
    var streamSink: HTTP1EventStreamSink?

    /// The request being read or answered.
    struct CurrentRequest {
        var head: HTTP1RequestHead
        var body: [UInt8] = []
        var remainingLength = 0
        var decoder: HTTP1ChunkedDecoder?
        var keepAlive: Bool
        var isHead: Bool
        var request: HTTPServerRequest?
        /// The route found for the head, when it was looked up before the body was read.
        var match: Router.Match?
    }

    /// Unconsumed input (pipelined requests) above which reading pauses while a request is answered.
    var maxBufferedInput: Int { core.configuration.maxHeaderBytes + 64 * 1024 }

    /// Body bytes of the current request charged to the server-wide budget.
    var chargedBodyBytes = 0

    init(connection: Connection, core: ServerCore) {
        self.connection = connection
        self.core = core
        date = core.dateCache(for: connection.loop)
        state = HTTP1ConnectionState(timeouts: core.timeouts, now: connection.loop.now)
    }

    var now: LoopInstant { connection.loop.now }

    func syncDeadline() {
        connection.deadline = state.deadline
    }

    // MARK: ConnectionHandler

    func connectionDidOpen(_ connection: Connection) {
        syncDeadline()
    }

    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
        guard state.phase != .closed else { return }
        input.append(contentsOf: bytes)
        processInput()
    }

    func connectionDidReadEOF(_ connection: Connection) {
        switch state.phase {
        case .responding:
            // The peer finished sending (half-close); answer, then close.
            current?.keepAlive = false
            connection.pauseReading()
        default:
            connection.close()
        }
    }

    func connectionDidDrain(_ connection: Connection) {
        guard isWaitingForDrain else { return }
        isWaitingForDrain = false
        processInput()
    }

    func connection(_ connection: Connection, deadlinePassed now: LoopInstant) {
        switch state.deadlinePassed(now: now, sending: connection.pendingBytes > 0) {
        case .none:
            break
        case .close:
            connection.close()
        case .requestTimeout:
            reject(HTTP1ParseError(status: 408, reason: "request not received in time"))
        case .heartbeat:
            streamSink?.writeHeartbeat()
        }
        syncDeadline()
    }

    func connectionExceededPendingLimit(_ connection: Connection) {
        // A bounded response may exceed the cap (it is written as the peer reads); a stream may not.
        guard state.phase == .streaming else { return }
        core.stats.droppedSlowSubscribers.add(1, ordering: .relaxed)
        if let streamSink {
            streamSink.endAsSlowSubscriber()
        } else {
            connection.close()
        }
    }

    func connectionShouldQuiesce(_ connection: Connection) {
        switch state.quiesce() {
        case .closeNow:
            // An idle connection may still have bytes queued for the loop's flush (the end of an
            // event stream, its last event): send them before closing.
            if connection.pendingBytes > 0 { connection.closeAfterFlush() } else { connection.close() }
        case .finishThenClose:
            current?.keepAlive = false
        case .endStream:
            streamSink?.end()
        }
    }

    func connectionDidClose(_ connection: Connection) {
        state.close()
        current = nil
        releaseBodyCharge()
        if let sink = streamSink {
            streamSink = nil
            sink.finish()
        }
    }
}
