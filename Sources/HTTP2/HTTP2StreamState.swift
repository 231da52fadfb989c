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
    private var pending: [UInt8] = []
    private var pendingStart = 0

    init(id: HTTP2StreamID) {
        self.id = id
    }

    var isHeadRequest: Bool { method == "HEAD" }

    var pendingCount: Int { pending.count - pendingStart }

    func enqueue(_ bytes: some Collection<UInt8>) {
        pending.append(contentsOf: bytes)
    }

    /// Copies up to `capacity` queued bytes to `destination` and forgets them.
    func dequeue(into destination: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        let count = min(capacity, pendingCount)
        guard count > 0 else { return 0 }
        pending.withUnsafeBufferPointer { source in
            destination.update(from: source.baseAddress! + pendingStart, count: count)
        }
        pendingStart += count
        if pendingStart == pending.count {
            // Drop large buffers once drained so an idle SSE stream holds no memory.
            pending.removeAll(keepingCapacity: pending.capacity <= 16 << 10)
            pendingStart = 0
        } else if pendingStart >= 64 << 10 {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        return count
    }
}
