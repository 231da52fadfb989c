import CLinuxIO
import Glibc
import SocketLoop
import Synchronization

/// One ``SocketLoop/EventLoop`` on its own thread driving many ``ClientConnection``s: the same
/// epoll loop the server runs, connecting outbound. Connections are opened only on the loop's
/// thread (from ``onStart`` or ``onTick``); ``stop()`` may be called from any thread. At most
/// ``maxConnecting`` connects are in flight at once, so ten thousand streams do not overflow the
/// server's accept backlog in one burst.
///
/// ```swift
/// let loop = try ClientLoop(index: 0, target: target, sources: SourceAddresses(count: 1))
/// loop.onStart = { loop in loop.connect(tag: 0, delegate: requester) }
/// loop.run()   // until loop.stop()
/// ```
public final class ClientLoop: @unchecked Sendable {
    public let index: Int
    public let target: BenchTarget
    public let sources: SourceAddresses
    /// Called on the loop thread once, before the first wait.
    public var onStart: (ClientLoop) -> Void = { _ in }
    /// Called on the loop thread after every wake-up, at least every ``tickMilliseconds``, with
    /// the ``MonotonicClock`` time.
    public var onTick: (ClientLoop, UInt64) -> Void = { _, _ in }
    public var tickMilliseconds = 10
    public var maxConnecting = 256

    let eventLoop: EventLoop
    private let stopRequested = Atomic<Bool>(false)
    private var pendingConnects: [(tag: Int, delegate: any ClientConnectionDelegate)] = []
    private var pendingConnectsStart = 0
    private var connecting = 0

    public init(index: Int, target: BenchTarget, sources: SourceAddresses) throws {
        self.index = index
        self.target = target
        self.sources = sources
        eventLoop = try EventLoop(index: index)
    }

    /// Queues a connection; it is opened when fewer than ``maxConnecting`` connects are in flight.
    public func connect(tag: Int, delegate: any ClientConnectionDelegate) {
        pendingConnects.append((tag, delegate))
        startPendingConnects()
    }

    /// Asks the loop to close every connection and return from ``run()``; safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        eventLoop.stop()
    }

    public var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        eventLoop.onEveryIteration(maxWait: .milliseconds(tickMilliseconds)) { [unowned self] now in
            onTick(self, now.nanoseconds)
        }
        eventLoop.execute { [self] in onStart(self) }
        eventLoop.run()
        pendingConnects.removeAll()
    }

    /// A connect in flight ended, established or not: the next queued one may start.
    func connectAttemptEnded() {
        connecting -= 1
        startPendingConnects()
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
        let client = ClientConnection(tag: tag, loop: self, delegate: delegate)
        do {
            let endpoint = IPv4Endpoint(address: target.address, port: target.port)
            connecting += 1
            // Kept at once, so bytes sent and a close asked for while connecting take effect.
            client.connection = try eventLoop.connect(to: endpoint, from: sources.address(for: tag), handler: client)
        } catch {
            connecting -= 1
            client.didFailToOpen(error.description)
        }
    }
}
