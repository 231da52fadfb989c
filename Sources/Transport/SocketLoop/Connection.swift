import CLinuxIO
import Glibc

/// One accepted socket, confined to its ``EventLoop`` thread: call its methods only there (hop
/// with ``EventLoop/execute(_:)`` from elsewhere).
///
/// Writes are queued and flushed at the end of the loop iteration with one `writev`, so several
/// responses or events written in one iteration leave in one system call; only what the kernel
/// refuses stays queued, and ``pendingBytes`` above the loop's cap triggers
/// ``ConnectionHandler/connectionExceededPendingLimit(_:)``.
public final class Connection: @unchecked Sendable {
    /// The loop that owns this connection.
    public let loop: EventLoop
    /// The socket descriptor (valid until closed).
    public let fileDescriptor: Int32
    /// The handler receiving this connection's events.
    public private(set) var handler: (any ConnectionHandler)?
    /// When the loop should call ``ConnectionHandler/connection(_:deadlinePassed:)``; nil for none.
    public var deadline: LoopInstant?
    /// Whether the connection is closed.
    public private(set) var isClosed = false
    /// Bytes queued but not yet accepted by the kernel.
    public internal(set) var pendingBytes = 0
    /// Whether the kernel refused bytes and the connection waits for it to accept more.
    public internal(set) var isWriteBlocked = false
    /// When bytes were last queued on an empty queue or taken by the kernel (for the send
    /// timeout: a peer that reads nothing holds its unsent bytes only so long).
    public internal(set) var lastWriteProgress = LoopInstant.now()
    /// The kernel's send queue (SIOCOUTQ) when it last refused bytes, or since: a peer that
    /// drains it slowly is making progress though the socket is not yet writable again.
    var kernelQueuedBytes = -1
    /// An outbound connection not yet established (see ``EventLoop/connect(to:from:handler:)``).
    public internal(set) var isConnecting = false
    /// Why the loop closed the connection, when a system call failed (connect refused, read
    /// reset); nil when it was closed by a handler or by the peer's orderly shutdown.
    public internal(set) var failure: SocketError?

    var pending: [ByteSlice] = []
    var pendingHead = 0
    var isQueuedForFlush = false
    var isReadingPaused = false
    var hasUnreadInput = false
    private var isOverLimitNotified = false
    var lingerState = LingerState.open
    /// Set by ``closeAfterFlush(within:)``: the deadline closes the connection even if unflushed.
    var closesAtDeadline = false

    enum LingerState {
        case open
        /// Close once everything queued is written.
        case closeAfterFlush
        /// Output shut down; discard input until EOF or the deadline, so the peer reads our
        /// final response instead of a reset.
        case lingering
    }

    private let peer: sockaddr_storage

    init(loop: EventLoop, fileDescriptor: Int32, peer: sockaddr_storage) {
        self.loop = loop
        self.fileDescriptor = fileDescriptor
        self.peer = peer
    }

    /// The peer: `203.0.113.7:51234`, `[2001:db8::1]:51234`, or `unix` for a Unix socket.
    public private(set) lazy var remoteAddress: String = SocketPeer.describe(peer)

    func attach(_ handler: any ConnectionHandler) {
        self.handler = handler
    }

    /// Hands this connection to `newHandler` (for example after a protocol upgrade) and delivers
    /// `bytes` already read but not consumed by the old handler.
    /// The old handler's deadline and read pause do not carry over.
    public func replaceHandler(with newHandler: any ConnectionHandler, replaying bytes: [UInt8] = []) {
        handler = newHandler
        deadline = nil
        newHandler.connectionDidOpen(self)
        if !bytes.isEmpty, !isClosed {
            bytes.withUnsafeBytes { newHandler.connection(self, didReceive: $0) }
        }
        if !isClosed { resumeReading() }
    }

    /// Queues bytes (copied once into a shared buffer).
    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        write(ByteSlice(SharedBytes(bytes)))
    }

    /// Queues a slice of a shared buffer without copying it.
    public func write(_ slice: ByteSlice) {
        guard !isClosed, lingerState == .open, slice.count > 0 else { return }
        if pendingBytes == 0 { lastWriteProgress = loop.now }
        pending.append(slice)
        pendingBytes += slice.count
        if !isQueuedForFlush {
            isQueuedForFlush = true
            loop.flushQueue.append(self)
        }
        if pendingBytes > loop.maxPendingBytes, !isOverLimitNotified {
            // Bytes queued in this iteration may simply not be flushed yet: try the kernel first.
            if !isWriteBlocked { flush() }
            guard !isClosed, pendingBytes > loop.maxPendingBytes else { return }
            isOverLimitNotified = true
            handler?.connectionExceededPendingLimit(self)
        }
    }

    /// Stops reading from the socket (input back-pressure) until ``resumeReading()``.
    public func pauseReading() {
        isReadingPaused = true
    }

    /// Resumes reading, including bytes that arrived while paused.
    public func resumeReading() {
        guard isReadingPaused else { return }
        isReadingPaused = false
        if hasUnreadInput {
            hasUnreadInput = false
            loop.readAvailable(self)
        }
    }

    /// Writes what is queued, then shuts down output and closes after a short linger.
    public func closeAfterFlush() {
        guard !isClosed, lingerState == .open else { return }
        lingerState = .closeAfterFlush
        if pendingBytes == 0 { beginLinger() }
    }

    /// Like ``closeAfterFlush()``, but if the peer has not taken everything queued within `timeout`
    /// (it stopped reading), the connection is closed then and the rest dropped. The handler's
    /// deadline is replaced.
    public func closeAfterFlush(within timeout: Duration) {
        guard !isClosed, lingerState == .open else { return }
        closeAfterFlush()
        if lingerState == .closeAfterFlush {
            closesAtDeadline = true
            deadline = loop.now.advanced(by: timeout)
        }
    }

    /// Closes the socket at once, dropping anything unsent.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        loop.unregister(self)
        CLinuxIO.close(fileDescriptor)
        pending.removeAll()
        pendingBytes = 0
        let handler = self.handler
        self.handler = nil
        handler?.connectionDidClose(self)
    }

    /// Closes the connection because `error` happened; the handler can read ``failure``.
    func fail(_ error: SocketError) {
        guard !isClosed else { return }
        failure = error
        close()
    }

    func beginLinger() {
        lingerState = .lingering
        shutdown(fileDescriptor, Int32(SHUT_WR))
        deadline = loop.now.advanced(by: loop.lingerTimeout)
    }

    func didDrainAfterLimit() {
        isOverLimitNotified = pendingBytes > loop.maxPendingBytes
    }
}

/// Formats a peer socket address for logs and proxy-trust decisions.
enum SocketPeer {
    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var raw = address.pointee.sin_addr
                    inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                    return "\(Self.string(text)):\(UInt16(bigEndian: address.pointee.sin_port))"
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var raw = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                    return "[\(Self.string(text))]:\(UInt16(bigEndian: address.pointee.sin6_port))"
                }
            case AF_UNIX:
                return "unix"
            default:
                return "unknown"
            }
        }
    }

    /// The C string in `buffer` (up to its first NUL).
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
