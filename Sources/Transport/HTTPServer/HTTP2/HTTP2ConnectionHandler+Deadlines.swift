import HTTP2
import HTTPTypes
import SocketLoop

/// The connection's one deadline: the earliest of the idle/heartbeat state, the slow
/// subscribers' resets and the request deadlines (preface, header block, body, sending, after
/// GOAWAY).
extension HTTP2ConnectionHandler {
    func connection(_ connection: Connection, deadlinePassed now: LoopInstant) {
        if let session {
            let due = table.takeDueResets(now: now)
            if !due.isEmpty {
                for stream in due { session.reset(stream, errorCode: .cancel) }
                flush()
            }
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
            // Over a copy of the records: a write may close a stream (and remove its record).
            for record in table.records.values { record.sink?.write(EncodedEvent.heartbeat) }
        }
        connection.deadline = nextDeadline
    }

    func updateDeadline() {
        let now = connection.loop.now
        let arriving = session?.arrivingRequests ?? []
        // A request still arriving is activity: the connection does not go idle under an upload
        // (its pieces have their own deadline).
        state.update(activeStreams: table.count + arriving.count, eventStreams: table.eventStreams, now: now)
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
    var nextDeadline: LoopInstant? {
        [state.deadline, table.earliestReset, requestDeadlines.deadline].compactMap { $0 }.min()
    }

    /// Resets `stream` (CANCEL) at `instant` unless it has closed by then.
    func resetUnlessClosed(_ stream: HTTP2StreamID, at instant: LoopInstant) {
        table.resetUnlessClosed(stream, at: instant)
        connection.deadline = nextDeadline
    }
}
