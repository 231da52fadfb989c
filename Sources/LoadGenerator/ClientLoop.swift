import CLinuxIO
import Glibc
import Synchronization

/// One epoll loop on its own thread driving many ``ClientConnection``s. Connections are opened
/// only on the loop's thread (from ``onStart`` or ``onTick``); ``stop()`` may be called from any
/// thread. At most ``maxConnecting`` connects are in flight at once, so ten thousand streams do not
/// overflow the server's accept backlog in one burst.
public final class ClientLoop: @unchecked Sendable {
    public let index: Int
    public let target: BenchTarget
    public let sources: SourceAddresses
    /// Called on the loop thread once, before the first wait.
    public var onStart: (ClientLoop) -> Void = { _ in }
    /// Called on the loop thread after every wait, at least every ``tickMilliseconds``.
    public var onTick: (ClientLoop, UInt64) -> Void = { _, _ in }
    public var tickMilliseconds: Int32 = 10
    public var maxConnecting = 256

    private let epollDescriptor: Int32
    private let wakeDescriptor: Int32
    private let stopRequested = Atomic<Bool>(false)
    private var connections: [ClientConnection?] = []
    private var pendingConnects: [(tag: Int, delegate: any ClientConnectionDelegate)] = []
    private var pendingConnectsStart = 0
    private var connecting = 0
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)

    public init(index: Int, target: BenchTarget, sources: SourceAddresses) {
        self.index = index
        self.target = target
        self.sources = sources
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = UInt64.max
        epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, wakeDescriptor, &event)
    }

    deinit {
        Glibc.close(epollDescriptor)
        Glibc.close(wakeDescriptor)
        readBuffer.deallocate()
    }

    /// Queues a connection; it is opened when fewer than ``maxConnecting`` connects are in flight.
    public func connect(tag: Int, delegate: any ClientConnectionDelegate) {
        pendingConnects.append((tag, delegate))
        startPendingConnects()
    }

    /// Asks the loop to close every connection and return from ``run()``; safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        eventfd_write(wakeDescriptor, 1)
    }

    public var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        let maxEvents = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: maxEvents)
        defer { events.deallocate() }
        onStart(self)
        while !isStopRequested {
            let count = epoll_wait(epollDescriptor, events, Int32(maxEvents), tickMilliseconds)
            for position in 0..<max(Int(count), 0) {
                dispatch(events[position])
            }
            onTick(self, MonotonicClock.now())
        }
        for case let connection? in connections { connection.close() }
        pendingConnects.removeAll()
    }

    private func dispatch(_ event: epoll_event) {
        let tag = event.data.u64
        if tag == UInt64.max {
            var value: eventfd_t = 0
            _ = eventfd_read(wakeDescriptor, &value)
            return
        }
        let descriptor = Int(tag)
        guard descriptor < connections.count, let connection = connections[descriptor] else { return }
        let flags = event.events
        if flags & EPOLLOUT.rawValue != 0 || !connection.isConnected {
            connection.didBecomeWritable()
        }
        if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readAvailable(connection)
        }
    }

    private func readAvailable(_ connection: ClientConnection) {
        while !connection.isClosed {
            let count = read(connection.fileDescriptor, readBuffer.baseAddress, readBuffer.count)
            if count > 0 {
                connection.didRead(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                if count < readBuffer.count { return }
            } else if count == 0 {
                connection.didReadEndOfFile()
                return
            } else {
                let code = errno
                if code == EINTR { continue }
                if code != EAGAIN && code != EWOULDBLOCK {
                    connection.close(error: "read: \(String(cString: strerror(code)))")
                }
                return
            }
        }
    }

    func connectionDidEstablish() {
        connecting -= 1
        startPendingConnects()
    }

    func remove(_ connection: ClientConnection) {
        let descriptor = Int(connection.fileDescriptor)
        if descriptor < connections.count, connections[descriptor] === connection {
            connections[descriptor] = nil
            if !connection.isConnected {
                connecting -= 1
                startPendingConnects()
            }
        }
    }

    private func startPendingConnects() {
        while connecting < maxConnecting, pendingConnectsStart < pendingConnects.count, !isStopRequested {
            let next = pendingConnects[pendingConnectsStart]
            pendingConnectsStart += 1
            if pendingConnectsStart == pendingConnects.count {
                pendingConnects.removeAll(keepingCapacity: true)
                pendingConnectsStart = 0
            }
            open(tag: next.tag, delegate: next.delegate)
        }
    }

    private func open(tag: Int, delegate: any ClientConnectionDelegate) {
        let descriptor = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            delegate.connectionDidClose(
                ClientConnection(fileDescriptor: -1, tag: tag, loop: self, delegate: delegate),
                error: "socket: \(String(cString: strerror(errno)))")
            return
        }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let connection = ClientConnection(fileDescriptor: descriptor, tag: tag, loop: self, delegate: delegate)
        if let source = sources.address(for: tag) {
            // IP_BIND_ADDRESS_NO_PORT (24): pick the port at connect time, per destination.
            setsockopt(descriptor, Int32(IPPROTO_IP), 24, &one, socklen_t(MemoryLayout<Int32>.size))
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr = source
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let message = "bind \(sources.name(for: tag)): \(String(cString: strerror(errno)))"
                Glibc.close(descriptor)
                delegate.connectionDidClose(connection, error: message)
                return
            }
        }
        let result = target.connect(descriptor)
        guard result == 0 || errno == EINPROGRESS else {
            let message = "connect: \(String(cString: strerror(errno)))"
            Glibc.close(descriptor)
            delegate.connectionDidClose(connection, error: message)
            return
        }
        if Int(descriptor) >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: Int(descriptor) + 1 - connections.count))
        }
        connections[Int(descriptor)] = connection
        connecting += 1
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = UInt64(descriptor)
        epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event)
    }
}
