import HTTP1
import SocketLoop
import Synchronization

/// Writes an ``EventStream`` onto an HTTP/1 connection: each event as one chunk of the shared
/// buffer (HTTP/1.1), or its raw bytes on a close-delimited HTTP/1.0 response.
final class HTTP1EventStreamSink: EventStreamSink {
    private unowned let handler: HTTP1ConnectionHandler
    private let stream: EventStream
    private let chunked: Bool
    /// gzip/deflate per event when the request accepted it (see ``ResponseCompression``).
    private let compressor: EventStreamCompressor?
    private var isActive = true

    private static let lastChunk = SharedBytes(HTTP1ResponseEncoder.lastChunk)

    init(
        handler: HTTP1ConnectionHandler, stream: EventStream, chunked: Bool, compressor: EventStreamCompressor? = nil
    ) {
        self.handler = handler
        self.stream = stream
        self.chunked = chunked
        self.compressor = compressor
    }

    func write(_ event: EncodedEvent) {
        guard isActive else { return }
        let event = compressor.map { $0.compress(event) } ?? event
        guard let event else { return end() }
        handler.connection.write(chunked ? event.chunk : event.payload)
    }

    func writeHeartbeat() {
        write(EncodedEvent.heartbeat)
    }

    func end() {
        guard isActive else { return }
        writeEnd()
        let keepAlive = handler.current?.keepAlive ?? false
        finish()
        handler.streamSink = nil
        handler.finishResponse(keepAlive: keepAlive)
    }

    /// Ends a stream whose peer left more than the cap unread: the configured farewell event
    /// (`event: error`) is queued past the cap, the body ends, and the connection closes once
    /// that is written or after the linger timeout. The peer resumes with `Last-Event-ID`.
    func endAsSlowSubscriber() {
        guard isActive else { return }
        // The connection reports the cap once per excursion, so these writes do not re-enter.
        if let farewell = handler.core.configuration.slowSubscriberEvent { write(farewell) }
        guard isActive else { return }
        writeEnd()
        finish()
        handler.streamSink = nil
        handler.closeAfterSlowStream()
    }

    /// The gzip trailer and the last chunk (HTTP/1.1); nothing ends a close-delimited body.
    private func writeEnd() {
        if let tail = compressor?.finish() { handler.connection.write(chunked ? tail.chunk : tail.payload) }
        if chunked { handler.connection.write(ByteSlice(Self.lastChunk)) }
    }

    /// Releases the stream (connection closed or stream ended) and runs its close callbacks.
    func finish() {
        guard isActive else { return }
        isActive = false
        handler.core.stats.openStreams.subtract(1, ordering: .relaxed)
        stream.didClose()
    }
}
