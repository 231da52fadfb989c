import CLinuxIO
import Glibc
import Logging
import Synchronization

/// One epoll loop on its own thread. It owns its listeners and connections outright; other
/// threads reach it only through ``execute(_:)`` (a locked inbox plus an `eventfd` wake-up).
///
/// ```swift
/// loop.execute { /* runs on the loop thread */ }
/// ```
public final class EventLoop: @unchecked Sendable {
    /// The loop's position in its server (0-based); stable for the server's lifetime.
    public let index: Int
    /// Unsent bytes per connection above which the handler's policy hook runs.
    public let maxPendingBytes: Int
    /// How long a closing connection waits for the peer after our last response.
    public let lingerTimeout: Duration
    let logger: Logger
    let epollDescriptor: Int32
    let wakeDescriptor: Int32
    let makeHandler: @Sendable (Connection) -> any ConnectionHandler
    let connectionCount = Atomic<Int>(0)
    /// Connections accepted and closed at once because the process was out of descriptors, and
    /// times the listener was paused for it, since start (the log says so once per tick).
    let shedConnectionsTotal = Atomic<Int>(0)
    let listenerPausesTotal = Atomic<Int>(0)
    /// Connections closed for making no write progress within ``sendTimeout``, since start.
    let stalledConnectionsTotal = Atomic<Int>(0)

    private let inbox = Mutex(Inbox())
    /// Whether urgent work waits: checked between the writes of a long flush.
    private let hasUrgentWork = Atomic<Bool>(false)
    private let threadIdentity = Atomic<UInt>(0)
    private let stopRequested = Atomic<Bool>(false)

    // Loop-thread state.
    var connections: [Connection?] = []
    var listeners: [ListenerRegistration] = []
    var flushQueue: [Connection] = []
    /// The time of the current wake-up (coarse clock for deadlines).
    public internal(set) var now = LoopInstant.now()
    var nextTick = LoopInstant.now()
    var spareDescriptor: Int32 = -1
    let readBuffer: UnsafeMutableRawBufferPointer
    var tickHandlers: [(LoopInstant) -> Void] = []
    var iterationHandlers: [(LoopInstant) -> Void] = []
    var iterationWaitMilliseconds: UInt64 = 1000
    var shedConnections = 0
    var pausedListeners = 0
    /// Connections this loop holds at most (0: no bound but the descriptor limit); beyond it a new
    /// connection is accepted and closed at once (shed, counted and logged like the descriptor
    /// limit's). Set before the loop runs.
    var maxConnections = 0
    /// Connections closed at the bound since the last tick (logged once per tick).
    var connectionsOverBound = 0
    /// How long a connection may hold unsent bytes its peer takes none of; nil: no limit. Set
    /// before the loop runs.
    var sendTimeout: Duration?

    /// Work queued from other threads: `urgent` runs ahead of `normal` (see ``executeUrgently(_:)``).
    private struct Inbox {
        var normal: [@Sendable () -> Void] = []
        var urgent: [@Sendable () -> Void] = []
        var isEmpty: Bool { normal.isEmpty && urgent.isEmpty }
    }

    struct ListenerRegistration {
        var descriptor: Int32
        /// Shared by all loops (a Unix socket): only unregistered here, closed by the server.
        var isShared: Bool
        var isRegistered: Bool
    }

    static let tickInterval = Duration.seconds(1)
    static let wakeTag: UInt64 = 1 << 40
    static let listenerTag: UInt64 = 1 << 41

    init(
        index: Int, maxPendingBytes: Int, lingerTimeout: Duration, logger: Logger,
        makeHandler: @escaping @Sendable (Connection) -> any ConnectionHandler
    ) throws {
        self.index = index
        self.maxPendingBytes = maxPendingBytes
        self.lingerTimeout = lingerTimeout
        self.logger = logger
        self.makeHandler = makeHandler
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollDescriptor >= 0 else { throw SocketError.lastError("epoll_create1") }
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeDescriptor >= 0 else {
            let error = SocketError.lastError("eventfd")
            CLinuxIO.close(epollDescriptor)
            throw error
        }
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeTag
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, wakeDescriptor, &event) == 0 else {
            throw SocketError.lastError("epoll_ctl add eventfd")
        }
        spareDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        readBuffer.deallocate()
        CLinuxIO.close(epollDescriptor)
        CLinuxIO.close(wakeDescriptor)
        if spareDescriptor >= 0 { CLinuxIO.close(spareDescriptor) }
    }

    /// The number of open connections on this loop.
    public var openConnections: Int { connectionCount.load(ordering: .relaxed) }

    /// Connections shed at the descriptor limit, and listener pauses, since start.
    public var descriptorLimitCounts: (shed: Int, pauses: Int) {
        (shedConnectionsTotal.load(ordering: .relaxed), listenerPausesTotal.load(ordering: .relaxed))
    }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool {
        threadIdentity.load(ordering: .acquiring) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Runs `work` on the loop thread, after the work queued before it. Safe from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = inbox.withLock { queue in
            let wasEmpty = queue.isEmpty
            queue.normal.append(work)
            return wasEmpty
        }
        if wasEmpty { wake() }
    }

    /// Runs `work` on the loop thread ahead of the work queued with ``execute(_:)`` that has not
    /// started yet, and writes what it queued on its connections at once instead of at the end of
    /// the loop iteration. For answers that must not wait behind bulk work such as an event
    /// fan-out to thousands of streams. Urgent work that arrives while the loop is flushing
    /// thousands of connections runs after at most 32 more of them. Urgent work runs in the order
    /// it was queued.
    ///
    /// ```swift
    /// loop.executeUrgently { connection.write(response) }   // leaves before queued fan-out writes
    /// ```
    public func executeUrgently(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = inbox.withLock { queue in
            let wasEmpty = queue.isEmpty
            queue.urgent.append(work)
            hasUrgentWork.store(true, ordering: .relaxed)
            return wasEmpty
        }
        if wasEmpty { wake() }
    }

    /// Runs `work` now when called on the loop thread, otherwise queues it with ``execute(_:)``.
    public func executeOrRunNow(_ work: @escaping @Sendable () -> Void) {
        if inEventLoop { work() } else { execute(work) }
    }

    /// Adds work run on every coarse tick (about once a second), on the loop thread.
    public func onTick(_ handler: @escaping (LoopInstant) -> Void) {
        tickHandlers.append(handler)
    }

    /// Adds work run after every wake-up, on the loop thread; the loop then waits at most
    /// `maxWait` for events (the smallest of all such registrations), so a client can pace its
    /// requests finer than the coarse tick. Call before ``run()`` or on the loop thread.
    ///
    /// ```swift
    /// loop.onEveryIteration(maxWait: .milliseconds(1)) { now in writers.sendDue(now: now) }
    /// ```
    public func onEveryIteration(maxWait: Duration, _ handler: @escaping (LoopInstant) -> Void) {
        let milliseconds = UInt64(max((maxWait / .milliseconds(1)).rounded(.up), 1))
        iterationWaitMilliseconds = min(iterationWaitMilliseconds, milliseconds)
        iterationHandlers.append(handler)
    }

    /// Asks the loop to close its connections and return from ``run()``; safe from any thread.
    public func stop() {
        requestStop()
    }

    /// Every open connection of this loop (call on the loop thread).
    public var allConnections: [Connection] { connections.compactMap { $0 } }

    func wake() {
        eventfd_write(wakeDescriptor, 1)
    }

    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }

    func markCurrentThread() {
        threadIdentity.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
    }

    func drainInbox() {
        var value: eventfd_t = 0
        _ = eventfd_read(wakeDescriptor, &value)
        while true {
            let (urgent, normal) = inbox.withLock { queue in
                let taken = (queue.urgent, queue.normal)
                queue.urgent.removeAll(keepingCapacity: true)
                queue.normal.removeAll(keepingCapacity: true)
                hasUrgentWork.store(false, ordering: .relaxed)
                return taken
            }
            if urgent.isEmpty && normal.isEmpty { return }
            if !urgent.isEmpty { runUrgent(urgent) }
            for item in normal { item() }
        }
    }

    /// Runs urgent work queued since the inbox was drained; called between the writes of a long
    /// flush (thousands of streams after a fan-out), so an answer waits for a few writes only.
    func runUrgentWork() {
        guard hasUrgentWork.load(ordering: .relaxed) else { return }
        let urgent = inbox.withLock { queue in
            let taken = queue.urgent
            queue.urgent.removeAll(keepingCapacity: true)
            hasUrgentWork.store(false, ordering: .relaxed)
            return taken
        }
        if !urgent.isEmpty { runUrgent(urgent) }
    }

    private func runUrgent(_ urgent: [@Sendable () -> Void]) {
        let firstNew = flushQueue.count
        for item in urgent { item() }
        // Write the urgent work's output now: connections queued earlier in this iteration (say,
        // 5 000 streams of a fan-out) are flushed after it.
        if flushQueue.count > firstNew {
            for connection in Array(flushQueue[firstNew...]) { connection.flush() }
        }
    }
}
