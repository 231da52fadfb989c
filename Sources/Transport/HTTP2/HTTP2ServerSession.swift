internal import CNGHTTP2
public import HTTPTypes

/// The server side of one HTTP/2 connection, without I/O: bytes in, events and bytes out.
///
/// A thin owner of an `nghttp2_session` (libnghttp2 1.52). The connection feeds it what the
/// socket read, acts on the events, and writes what it produces; nghttp2 does framing, HPACK,
/// flow control, stream states and the protocol checks. The session adds what HTTP needs on
/// top: requests as `HTTPRequest` plus body with size caps (413/431 answered here), whole and
/// streamed responses with a bounded queue per stream, and graceful shutdown.
///
/// Not thread-safe (neither is nghttp2): use it from the connection's loop thread only.
///
/// ```swift
/// let session = try HTTP2ServerSession()
/// try session.receive(bytesFromSocket)
/// for case .request(let stream, let head, let body) in session.takeEvents() {
///     session.respond(to: stream, with: HTTPResponse(status: .ok), body: Array("hi".utf8))
/// }
/// socket.write(try session.drainOutput())
/// ```
public final class HTTP2ServerSession {
    /// The limits this session enforces.
    public let configuration: HTTP2Configuration

    let session: OpaquePointer
    /// Bytes nghttp2 holds for this session, maintained by `HTTP2Allocator`.
    private let heldBytes: UnsafeMutablePointer<Int>
    var streams: [Int32: HTTP2StreamState] = [:]
    /// Streams whose request is still arriving (begun, not handed out); see `arrivingRequests`.
    var arrivingStreams: Set<Int32> = []
    /// The highest stream id a client HEADERS frame has used (1 after an h2c upgrade).
    var highestClientStream: Int32 = 0
    /// Whether a whole frame has arrived from the client (its connection preface is complete).
    public internal(set) var hasReceivedFrame = false
    /// Header blocks abandoned far past the header-list limit (see `receiveHeader`).
    var oversizedHeaderBlocks = 0
    /// Abandoned header blocks after which the connection is cut off.
    static let oversizedHeaderBlocksBeforeGoAway = 3
    var events: [HTTP2Event] = []
    /// Body bytes held for requests that are not complete yet (bounded by the configuration).
    var bufferedRequestBytes = 0
    /// The server-wide bound on request bodies this session also charges (``HTTP2BodyBudget``).
    public var bodyBudget: (any HTTP2BodyBudget)?
    /// Decides, from a request's head, whether its body is worth reading: false hands the
    /// request out at once with an empty body (its route will refuse it from the head alone) and
    /// drops its DATA unread. Not asked for requests that end with their headers.
    ///
    /// ```swift
    /// session.admitsBody = { head in head.headerFields[.contentType] == "application/json" }
    /// ```
    public var admitsBody: ((HTTPRequest) -> Bool)?
    /// Renders the answers the session gives itself (431, 413, 400, 503) from their status, a
    /// message for the client and a fixed reason (the same for every such request: fit for a
    /// log or a metric label). nil answers in plain text.
    ///
    /// ```swift
    /// session.renderRejection = { status, message, _ in (HTTPResponse(status: status), Array(message.utf8)) }
    /// ```
    public var renderRejection: ((HTTPResponse.Status, String, String) -> (HTTPResponse, [UInt8]))?
    /// Response bytes queued on all streams and not yet taken by nghttp2.
    public internal(set) var queuedResponseBytes = 0
    /// Streams with response bytes queued (see ``queuedResponses``).
    var sendingStreams: Set<Int32> = []
    /// Streams the session answers or refuses itself once the current `receive` returns.
    var rejectedStreams: [HTTP2StreamState] = []

    /// Creates a session and queues the server's SETTINGS frame (the server connection preface).
    ///
    /// - Throws: ``HTTP2SessionError`` when nghttp2 cannot allocate the session.
    public init(configuration: HTTP2Configuration = HTTP2Configuration()) throws(HTTP2SessionError) {
        self.configuration = configuration
        var callbacks: OpaquePointer?
        var status = nghttp2_session_callbacks_new(&callbacks)
        guard status == 0, let callbacks else { throw HTTP2SessionError("nghttp2_session_callbacks_new", code: status) }
        defer { nghttp2_session_callbacks_del(callbacks) }
        HTTP2Callbacks.install(on: callbacks)

        var option: OpaquePointer?
        status = nghttp2_option_new(&option)
        guard status == 0, let option else { throw HTTP2SessionError("nghttp2_option_new", code: status) }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_stream_reset_rate_limit(option, configuration.resetBurst, configuration.resetRatePerSecond)

        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        var allocator = HTTP2Allocator.make(counting: counter)
        var created: OpaquePointer?
        status = nghttp2_session_server_new3(&created, callbacks, nil, option, &allocator)
        guard status == 0, let created else {
            counter.deallocate()
            throw HTTP2SessionError("nghttp2_session_server_new3", code: status)
        }
        session = created
        heldBytes = counter
        // The callbacks find this object through user_data; the session never outlives it.
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())
        try submitSettings()
    }

    deinit {
        nghttp2_session_del(session)
        heldBytes.deallocate()
        // Bodies of requests that never completed leave the server-wide budget with the connection.
        if bufferedRequestBytes > 0 { bodyBudget?.releaseBodyBytes(bufferedRequestBytes) }
    }

    /// Bytes libnghttp2 currently holds for this connection (HPACK tables, stream objects,
    /// queued frames), counted by its allocator hooks. The Swift side adds per stream the
    /// request being assembled and the response bytes waiting for window (``pendingBytes(on:)``).
    public var allocatedBytes: Int { heldBytes.pointee }

    private func submitSettings() throws(HTTP2SessionError) {
        let settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: configuration.maxConcurrentStreams),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: configuration.initialWindowSize),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: configuration.maxHeaderListSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
        ]
        let status = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count)
        guard status == 0 else { throw HTTP2SessionError("nghttp2_submit_settings", code: status) }
        let window = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, configuration.connectionWindowSize)
        guard window == 0 else { throw HTTP2SessionError("nghttp2_session_set_local_window_size", code: window) }
    }

    // MARK: Input

    /// Feeds bytes read from the socket. Events it causes are collected for ``takeEvents()``.
    ///
    /// - Throws: ``HTTP2SessionError`` when the connection must close (bad preface, flooding,
    ///   too many resets). Still send ``drainOutput(into:limit:)``'s bytes before closing.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2SessionError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        let status = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        answerRejectedStreams()
        guard status >= 0 else {
            // A flood (control frames queued faster than the client reads their answers) ends
            // with GOAWAY(ENHANCE_YOUR_CALM) after the answers already queued, not a bare close.
            if status == Int(NGHTTP2_ERR_FLOODED.rawValue) { terminate(errorCode: .enhanceYourCalm) }
            throw HTTP2SessionError("nghttp2_session_mem_recv", code: Int32(status))
        }
    }

    /// Feeds bytes read from the socket; see ``receive(_:)-(UnsafeRawBufferPointer)``.
    public func receive(_ bytes: some Collection<UInt8>) throws(HTTP2SessionError) {
        let contiguous: Result<Void, HTTP2SessionError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(HTTP2SessionError) in try receive(UnsafeRawBufferPointer(buffer)) }
        }
        if let contiguous { return try contiguous.get() }
        let copied: Result<Void, HTTP2SessionError> = Array(bytes).withUnsafeBytes { buffer in
            Result { () throws(HTTP2SessionError) in try receive(buffer) }
        }
        try copied.get()
    }

    /// Returns and forgets the events collected since the last call, oldest first.
    public func takeEvents() -> [HTTP2Event] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    // MARK: Output

    /// Appends frames ready to send to `buffer`, stopping once at least `limit` bytes were added
    /// (so a connection whose socket is full does not copy everything into memory at once).
    ///
    /// - Returns: the number of bytes appended; 0 means nothing is ready (see ``wantsWrite``).
    @discardableResult
    public func drainOutput(into buffer: inout [UInt8], limit: Int = .max) throws(HTTP2SessionError) -> Int {
        var appended = 0
        while appended < limit {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count >= 0 else { throw HTTP2SessionError("nghttp2_session_mem_send", code: Int32(count)) }
            guard count > 0, let data else { break }
            buffer.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
            appended += count
        }
        return appended
    }

    /// Returns every frame ready to send.
    public func drainOutput() throws(HTTP2SessionError) -> [UInt8] {
        var buffer: [UInt8] = []
        try drainOutput(into: &buffer)
        return buffer
    }

    /// nghttp2 has frames to send (possibly blocked only by flow control).
    public var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// Neither side will send anything more: close the connection once the output is written.
    /// True after a fatal error or GOAWAY (either way) once the last stream has ended.
    public var isFinished: Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// Streams with a request handed to the caller that have not closed yet.
    public var openStreams: [HTTP2StreamID] {
        streams.values.filter(\.requestDelivered).map(\.id).sorted()
    }

    /// Response bytes queued on `stream` that flow control has not let out yet.
    public func pendingBytes(on stream: HTTP2StreamID) -> Int {
        streams[stream.rawValue]?.pendingCount ?? 0
    }

    // MARK: Shutdown

    /// Starts a graceful shutdown: sends GOAWAY(NO_ERROR) naming the last stream the server
    /// processed. Streams up to it run to completion, later ones are ignored, and ``isFinished``
    /// becomes true when the last one ends. End long-lived (SSE) streams with ``endStream(_:)``.
    public func beginGracefulShutdown() {
        let lastStream = nghttp2_session_get_last_proc_stream_id(session)
        _ = nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStream, NGHTTP2_NO_ERROR.rawValue, nil, 0)
    }

    /// Ends the connection now: GOAWAY with `errorCode` (RFC 9113 §7), no further streams.
    public func terminate(errorCode: HTTP2ErrorCode = .noError) {
        _ = nghttp2_session_terminate_session(session, errorCode.rawValue)
    }
}

/// An HTTP/2 stream identifier (RFC 9113 §5.1.1). Client-initiated request streams are odd.
///
/// ```swift
/// let first = HTTP2StreamID(1)  // the stream an h2c upgrade request becomes
/// ```
public struct HTTP2StreamID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: Int32

    public init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    public static func < (lhs: HTTP2StreamID, rhs: HTTP2StreamID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "stream \(rawValue)" }
}

/// A failure reported by nghttp2, with the operation and nghttp2's own explanation.
///
/// A failed ``HTTP2ServerSession/receive(_:)`` means the peer broke the protocol badly enough
/// that the connection must close: send what ``HTTP2ServerSession/drainOutput(into:limit:)``
/// still produces (often a GOAWAY naming the error), then close the socket.
public struct HTTP2SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the server was doing, e.g. "nghttp2_session_mem_recv".
    public let operation: String
    /// nghttp2's negative error code (`NGHTTP2_ERR_*`).
    public let code: Int32
    /// Extra context, e.g. the settings header that failed to decode.
    public let detail: String

    init(_ operation: String, code: Int32, detail: String = "") {
        self.operation = operation
        self.code = code
        self.detail = detail
    }

    public var description: String {
        let reason = String(cString: nghttp2_strerror(code))
        return "\(operation) failed: \(reason) (\(code))" + (detail.isEmpty ? "" : ": \(detail)")
    }
}
