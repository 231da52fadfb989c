import SocketLoop
import Synchronization

/// An open Server-Sent Events response. Every method is safe from any thread: work hops to the
/// stream's loop, in call order, even when called on the loop itself (see ``sendEncoded(_:)``).
/// The stream ends when ``close()`` is called, the peer goes away, it falls too far behind (more
/// unsent bytes than the configured cap), or the server shuts down; then the ``onClose(_:)``
/// callbacks run once, on the loop thread.
///
/// ```swift
/// router.get("/events") { request, context in
///     let stream = context.openEventStream()
///     stream.onClose { print("subscriber left") }
///     stream.send(SSEEvent(event: "hello", data: "{}"))
///     return .streamOpened
/// }
/// ```
public final class EventStream: Sendable {
    /// The loop that owns the stream's connection.
    public let loop: EventLoop
    private let state = Mutex(State())
    // Loop-confined: set and used only on `loop`.
    nonisolated(unsafe) private var sink: (any EventStreamSink)?

    private struct State {
        var isClosed = false
        var callbacks: [@Sendable () -> Void] = []
    }

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Whether the stream has ended.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    /// Encodes `event` and writes it.
    public func send(_ event: SSEEvent) {
        sendEncoded(event.encoded())
    }

    /// Writes an event encoded once (for example by ``EventBroadcaster``) without copying it.
    ///
    /// Always queued, even on the loop thread: an event another thread sent a moment earlier may
    /// still wait in the loop's queue, and writing this one at once would put it first. A stream
    /// of several scopes gets events from every thread that commits or publishes presence, so
    /// "at once when on the loop" sent a scope's `update` after its `leave`.
    public func sendEncoded(_ event: EncodedEvent) {
        loop.execute { self.writeOnLoop(event) }
    }

    /// Writes a comment line, for example a heartbeat.
    public func sendComment(_ text: String) {
        sendEncoded(SSEEvent.comment(text))
    }

    /// Ends the stream cleanly, after every event sent before; the connection may serve further
    /// requests. Queued like ``sendEncoded(_:)``, so it never overtakes an event still queued.
    public func close() {
        loop.execute { self.sink?.end() }
    }

    /// Runs `callback` once when the stream ends (at once, on this thread, if it already has).
    public func onClose(_ callback: @escaping @Sendable () -> Void) {
        let alreadyClosed = state.withLock { state in
            if !state.isClosed { state.callbacks.append(callback) }
            return state.isClosed
        }
        if alreadyClosed { callback() }
    }

    // MARK: loop side

    func writeOnLoop(_ event: EncodedEvent) {
        sink?.write(event)
    }

    /// Ends the stream now; for work already running on the loop in the right place of the queue
    /// (``close()`` would queue the end behind what is queued meanwhile).
    func endOnLoop() {
        sink?.end()
    }

    func attach(_ sink: any EventStreamSink) {
        self.sink = sink
    }

    /// Marks the stream ended and runs the callbacks; called by the sink's owner on the loop.
    func didClose() {
        sink = nil
        let callbacks = state.withLock { state in
            defer {
                state.isClosed = true
                state.callbacks = []
            }
            return state.isClosed ? [] : state.callbacks
        }
        for callback in callbacks { callback() }
    }
}

/// Writes the events of one ``EventStream`` to its protocol: HTTP/1.1 chunks, close-delimited
/// HTTP/1.0, or (later) HTTP/2 DATA frames, possibly gzip'd per stream. Loop thread only.
protocol EventStreamSink: AnyObject {
    /// Writes one encoded event (the buffer is shared with other streams: do not mutate it).
    func write(_ event: EncodedEvent)
    /// Ends the stream cleanly (last chunk, END_STREAM) and releases the request.
    func end()
}
