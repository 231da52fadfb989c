import CLinuxIO
import Glibc
import Logging
import Synchronization

extension EventLoop {
    /// Starts accepting on `descriptor` (a listening socket); on the loop thread.
    func addListener(_ descriptor: Int32, isShared: Bool) {
        listeners.append(ListenerRegistration(descriptor: descriptor, isShared: isShared, isRegistered: false))
        registerListener(at: listeners.count - 1)
    }

    func registerListener(at position: Int) {
        var event = epoll_event()
        // Level-triggered: a backlog left after EAGAIN-free exits is seen again. A listener
        // shared between loops wakes only one of them per connection.
        event.events = EPOLLIN.rawValue | (listeners[position].isShared ? EPOLLEXCLUSIVE.rawValue : 0)
        event.data.u64 = Self.listenerTag | UInt64(UInt32(bitPattern: listeners[position].descriptor))
        if epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, listeners[position].descriptor, &event) == 0 {
            listeners[position].isRegistered = true
        } else {
            logger.error("cannot watch listener", metadata: ["error": "\(SocketError.lastError("epoll_ctl"))"])
        }
    }

    /// Stops accepting: unregisters every listener and closes those this loop owns.
    func removeListeners() {
        for listener in listeners where listener.isRegistered {
            var event = epoll_event()
            epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, listener.descriptor, &event)
        }
        for listener in listeners where !listener.isShared { CLinuxIO.close(listener.descriptor) }
        listeners.removeAll()
    }

    /// Accepts until the backlog is empty. Out of descriptors, it sheds the connection with the
    /// spare-descriptor trick, or pauses the listener until the next tick, so it never spins.
    func acceptConnections(listener: Int32) {
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let descriptor = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listener, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if descriptor >= 0 {
                if maxConnections > 0, connectionCount.load(ordering: .relaxed) >= maxConnections {
                    // At the configured bound: refuse by closing at once, before any byte is read.
                    CLinuxIO.close(descriptor)
                    connectionsOverBound += 1
                    continue
                }
                adopt(descriptor, peer: peer)
                continue
            }
            let code = errno
            switch code {
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EMFILE, ENFILE:
                if spareDescriptor >= 0 {
                    CLinuxIO.close(spareDescriptor)
                    let shed = accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                    let shedError = errno
                    if shed >= 0 { CLinuxIO.close(shed) }
                    spareDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    if shed >= 0 {
                        // Counted and logged once per tick: a flood must not flood the log too.
                        shedConnections += 1
                        continue
                    }
                    if shedError == EAGAIN || shedError == EWOULDBLOCK { return }
                }
                pauseListener(listener)
                return
            case ENOBUFS, ENOMEM:
                pauseListener(listener)
                return
            default:
                return
            }
        }
    }

    private func pauseListener(_ descriptor: Int32) {
        guard let position = listeners.firstIndex(where: { $0.descriptor == descriptor }) else { return }
        var event = epoll_event()
        epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, &event)
        listeners[position].isRegistered = false
        pausedListeners += 1
    }

    private func adopt(_ descriptor: Int32, peer: sockaddr_storage) {
        var enable: Int32 = 1
        // Fails harmlessly on Unix sockets.
        _ = setsockopt(
            descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &enable, socklen_t(MemoryLayout<Int32>.size))
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: descriptor))
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else {
            CLinuxIO.close(descriptor)
            return
        }
        let connection = Connection(loop: self, fileDescriptor: descriptor, peer: peer)
        register(connection)
        let handler = makeHandler(connection)
        connection.attach(handler)
        handler.connectionDidOpen(connection)
    }
}
