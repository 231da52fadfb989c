import CLinuxIO
import Glibc
import Logging
import Synchronization

extension EventLoop {
    private static let maxEvents = 256

    /// The loop body: wait, dispatch readiness, run queued work, tick deadlines, flush writes.
    /// Runs on the calling thread until ``stop()``; a ``SocketServer`` runs its loops itself.
    public func run() {
        markCurrentThread()
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Self.maxEvents)
        defer { events.deallocate() }
        now = LoopInstant.now()
        nextTick = now.advanced(by: Self.tickInterval)
        while !isStopRequested {
            let waitNanoseconds = nextTick.nanoseconds > now.nanoseconds ? nextTick.nanoseconds - now.nanoseconds : 0
            let maxWait: UInt64 = iterationHandlers.isEmpty ? 1000 : iterationWaitMilliseconds
            let timeout = flushQueue.isEmpty ? Int32(min(waitNanoseconds / 1_000_000 + 1, maxWait)) : 0
            let count = epoll_wait(epollDescriptor, events, Int32(Self.maxEvents), timeout)
            now = LoopInstant.now()
            if count < 0 && errno != EINTR {
                logger.error("epoll_wait failed", metadata: ["error": "\(SocketError.lastError("epoll_wait"))"])
            }
            for position in 0..<max(Int(count), 0) {
                dispatch(events[position])
            }
            for handler in iterationHandlers { handler(now) }
            if now >= nextTick {
                tick()
            }
            flushQueued()
        }
        drainInbox()
        for connection in allConnections { connection.close() }
        for listener in listeners where !listener.isShared { CLinuxIO.close(listener.descriptor) }
        listeners.removeAll()
    }

    private func dispatch(_ event: epoll_event) {
        let tag = event.data.u64
        if tag == Self.wakeTag {
            drainInbox()
            return
        }
        if tag & Self.listenerTag != 0 {
            acceptConnections(listener: Int32(truncatingIfNeeded: tag & 0xFFFF_FFFF))
            return
        }
        let descriptor = Int(tag)
        guard descriptor < connections.count, let connection = connections[descriptor] else { return }
        let flags = event.events
        if connection.isConnecting {
            finishConnecting(connection)
            if connection.isClosed { return }
        }
        if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readAvailable(connection)
        }
        if flags & EPOLLOUT.rawValue != 0, !connection.isClosed, connection.isWriteBlocked {
            connection.flush()
        }
    }

    /// Reads until the kernel has nothing more (edge-triggered), handing each read to the handler.
    func readAvailable(_ connection: Connection) {
        while !connection.isClosed {
            if connection.isReadingPaused {
                connection.hasUnreadInput = true
                return
            }
            let count = read(connection.fileDescriptor, readBuffer.baseAddress, readBuffer.count)
            if count > 0 {
                if connection.lingerState == .lingering { continue }
                connection.handler?.connection(
                    connection, didReceive: UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                // A short read emptied the socket; a new edge comes with new data.
                if count < readBuffer.count { return }
            } else if count == 0 {
                if connection.lingerState == .lingering {
                    connection.close()
                } else if let handler = connection.handler {
                    handler.connectionDidReadEOF(connection)
                } else {
                    connection.close()
                }
                return
            } else {
                let code = errno
                if code == EINTR { continue }
                if code != EAGAIN && code != EWOULDBLOCK { connection.fail(SocketError(operation: "read", code: code)) }
                return
            }
        }
    }

    private func flushQueued() {
        while !flushQueue.isEmpty {
            let queue = flushQueue
            flushQueue.removeAll(keepingCapacity: true)
            for (position, connection) in queue.enumerated() {
                connection.flush()
                if position & 31 == 31 { runUrgentWork() }
            }
        }
    }

    private func tick() {
        nextTick = now.advanced(by: Self.tickInterval)
        if connectionsOverBound > 0 {
            logger.warning(
                "connection bound reached: new connections closed",
                metadata: ["shed": "\(connectionsOverBound)", "bound": "\(maxConnections)", "loop": "\(index)"])
            shedConnectionsTotal.add(connectionsOverBound, ordering: .relaxed)
            connectionsOverBound = 0
        }
        if shedConnections > 0 || pausedListeners > 0 {
            logger.warning(
                "out of file descriptors: connections shed, listener paused",
                metadata: ["shed": "\(shedConnections)", "pauses": "\(pausedListeners)", "loop": "\(index)"])
            shedConnectionsTotal.add(shedConnections, ordering: .relaxed)
            listenerPausesTotal.add(pausedListeners, ordering: .relaxed)
            shedConnections = 0
            pausedListeners = 0
        }
        for handler in tickHandlers { handler(now) }
        var stalled = 0
        for case let connection? in connections {
            if let sendTimeout, connection.hasStalled(now: now, timeout: sendTimeout) {
                // The peer has taken nothing for the send timeout: what it holds is freed.
                stalled += 1
                connection.close()
                continue
            }
            guard let deadline = connection.deadline, deadline <= now, !connection.isClosed else { continue }
            connection.deadline = nil
            if connection.lingerState == .lingering
                || (connection.lingerState == .closeAfterFlush && connection.closesAtDeadline)
            {
                connection.close()
            } else {
                connection.handler?.connection(connection, deadlinePassed: now)
            }
        }
        if stalled > 0 {
            stalledConnectionsTotal.add(stalled, ordering: .relaxed)
            logger.debug("closed connections whose peers read nothing", metadata: ["stalled": "\(stalled)"])
        }
        for position in listeners.indices where !listeners[position].isRegistered {
            registerListener(at: position)
        }
    }

    func unregister(_ connection: Connection) {
        let descriptor = Int(connection.fileDescriptor)
        if descriptor < connections.count, connections[descriptor] === connection {
            connections[descriptor] = nil
            connectionCount.subtract(1, ordering: .relaxed)
        }
    }
}
