import HTTPTypes

/// What the session tracks for one stream: the request as it arrives, then the response bytes
/// waiting for flow-control window. A class so the C callbacks can mutate it in place through
/// the session's dictionary without copying buffers.
final class HTTP2StreamState {
    /// Why the session answers a request itself instead of handing it to the caller.
    enum Rejection {
        case headersTooLarge
        case bodyTooLarge
        case malformed(String)
        /// The connection's buffer for unfinished uploads is full: refuse, the client may retry.
        case overBudget
        /// The server-wide budget for request bodies is spent (``HTTP2BodyBudget``): 503.
        case serverBusy
    }

    /// A piece of a queued response: bytes the stream owns, or a buffer shared by reference.
    private enum Chunk {
        case bytes([UInt8])
        case shared(any HTTP2SharedBody)

        var count: Int {
            switch self {
            case .bytes(let bytes): bytes.count
            case .shared(let body): body.count
            }
        }
    }

    let id: HTTP2StreamID

    // Request side.
    var method: String?
    var scheme: String?
    var authority: String?
    var path: String?
    var fields = HTTPFields()
    var headerListSize = 0
    var body: [UInt8] = []
    var headersComplete = false
    var rejection: Rejection?
    var rejectionQueued = false
    var requestDelivered = false

    // Response side.
    var responseStarted = false
    /// The caller has written the last byte (or the whole body was given at once).
    var endWritten = false
    /// nghttp2 parked the stream's data provider with NGHTTP2_ERR_DEFERRED.
    var isDeferred = false
    private var chunks: [Chunk] = []
    private var chunkHead = 0
    /// Bytes of `chunks[chunkHead]` already handed to nghttp2.
    private var headOffset = 0
    /// Response bytes queued and not yet handed to nghttp2.
    private(set) var pendingCount = 0
    /// Response bytes handed to nghttp2 so far (progress, for the send deadline).
    private(set) var sentCount = 0

    init(id: HTTP2StreamID) {
        self.id = id
    }

    var isHeadRequest: Bool { method == "HEAD" }

    /// Queues a copy of `bytes`; small writes (events) share one growing chunk.
    func enqueue(_ bytes: some Collection<UInt8>) {
        guard !bytes.isEmpty else { return }
        pendingCount += bytes.count
        let last = chunks.count - 1
        if last >= chunkHead, case .bytes(var tail) = chunks[last], tail.count < 16 << 10 {
            chunks[last] = .bytes([])  // drop the array's second reference: append in place
            tail.append(contentsOf: bytes)
            chunks[last] = .bytes(tail)
        } else {
            chunks.append(.bytes(Array(bytes)))
        }
    }

    /// Queues `body` by reference, without a copy.
    func enqueue(shared body: any HTTP2SharedBody) {
        guard body.count > 0 else { return }
        pendingCount += body.count
        chunks.append(.shared(body))
    }

    /// Copies up to `capacity` queued bytes to `destination` and forgets them; a chunk is
    /// released as soon as its last byte is copied.
    func dequeue(into destination: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        var copied = 0
        while copied < capacity, chunkHead < chunks.count {
            let chunk = chunks[chunkHead]
            let take = min(capacity - copied, chunk.count - headOffset)
            switch chunk {
            case .bytes(let bytes):
                bytes.withUnsafeBufferPointer { source in
                    (destination + copied).update(from: source.baseAddress! + headOffset, count: take)
                }
            case .shared(let body):
                body.withUnsafeBytes { source in
                    UnsafeMutableRawPointer(destination + copied).copyMemory(
                        from: source.baseAddress! + headOffset, byteCount: take)
                }
            }
            copied += take
            headOffset += take
            if headOffset == chunk.count {
                chunks[chunkHead] = .bytes([])
                chunkHead += 1
                headOffset = 0
            }
        }
        if chunkHead == chunks.count {
            // Drop large queues once drained so an idle SSE stream holds no memory.
            chunks.removeAll(keepingCapacity: chunks.capacity <= 16)
            chunkHead = 0
        } else if chunkHead >= 64 {
            chunks.removeFirst(chunkHead)
            chunkHead = 0
        }
        pendingCount -= copied
        sentCount += copied
        return copied
    }
}
