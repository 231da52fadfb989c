import HTTP2
import HTTPTypes
import SocketLoop
import Synchronization

/// Writes an ``EventStream`` onto one HTTP/2 stream: each event's SSE bytes (gzip'd per stream
/// when negotiated) become DATA as the client's window allows. A client that leaves more than
/// ``HTTP2Configuration/maxPendingBytesPerStream`` unread is dropped: it gets the configured
/// `event: error` past the cap, then END_STREAM (or a reset, CANCEL, if it has not read them
/// within the linger timeout); counted in `droppedSlowSubscribers`, it reconnects with
/// `Last-Event-ID`.
final class HTTP2EventStreamSink: EventStreamSink {
    private unowned let handler: HTTP2ConnectionHandler
    let streamID: HTTP2StreamID
    private let stream: EventStream
    private let compressor: EventStreamCompressor?
    private var isActive = true
    private var isEnding = false

    init(
        handler: HTTP2ConnectionHandler, streamID: HTTP2StreamID, stream: EventStream,
        compressor: EventStreamCompressor?
    ) {
        self.handler = handler
        self.streamID = streamID
        self.stream = stream
        self.compressor = compressor
    }

    func write(_ event: EncodedEvent) {
        guard isActive, !isEnding, let session = handler.session else { return }
        let payload: EncodedEvent
        if let compressor {
            guard let compressed = compressor.compress(event) else { return end() }
            payload = compressed
        } else {
            payload = event
        }
        let bytes = payload.payload
        let result = bytes.storage.withUnsafeBytes { buffer in
            session.write(UnsafeRawBufferPointer(rebasing: buffer[bytes.range]), to: streamID)
        }
        if result == .overflow {
            handler.core.stats.droppedSlowSubscribers.add(1, ordering: .relaxed)
            endAsSlowSubscriber(session)
        }
        handler.flush()
    }

    /// The client left more than the cap unread: queue the configured farewell event past the cap,
    /// end the stream after it, and reset the stream if the client has not taken it all within
    /// the linger timeout.
    private func endAsSlowSubscriber(_ session: HTTP2ServerSession) {
        isEnding = true
        var last: [UInt8] = []
        if let farewell = handler.core.configuration.slowSubscriberEvent {
            if let compressor {
                last = compressor.compress(farewell)?.payloadBytes ?? []
            } else {
                last = farewell.payloadBytes
            }
        }
        if let tail = compressor?.finish() { last += tail.payloadBytes }
        if !last.isEmpty { session.write(last, to: streamID, exceedingCap: true) }
        session.endStream(streamID)
        let loop = handler.connection.loop
        handler.resetUnlessClosed(streamID, at: loop.now.advanced(by: loop.lingerTimeout))
    }

    /// Ends the stream after what is queued (END_STREAM); the stream is released when nghttp2
    /// reports it closed.
    func end() {
        guard isActive, !isEnding, let session = handler.session else { return }
        isEnding = true
        if let tail = compressor?.finish() {
            let bytes = tail.payloadBytes
            session.write(bytes, to: streamID)
        }
        session.endStream(streamID)
        handler.flush()
    }

    /// Releases the stream (closed by either side or with the connection) and runs its callbacks.
    func finish() {
        guard isActive else { return }
        isActive = false
        handler.core.stats.openStreams.subtract(1, ordering: .relaxed)
        stream.didClose()
    }
}
