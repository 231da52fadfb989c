import CLinuxIO
import Glibc

/// Starts an ``EventLoop`` on its own POSIX thread.
enum LoopThread {
    private final class Box {
        let loop: EventLoop
        init(_ loop: EventLoop) { self.loop = loop }
    }

    static let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        guard let argument else { return nil }
        let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
        box.loop.run()
        return nil
    }

    static func spawn(_ loop: EventLoop) throws -> pthread_t {
        var thread = pthread_t()
        let argument = Unmanaged.passRetained(Box(loop)).toOpaque()
        let result = pthread_create(&thread, nil, entry, argument)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(argument).release()
            throw SocketError(operation: "pthread_create", code: result)
        }
        return thread
    }
}

/// A one-shot wait for work done on loop threads (used by blocking control calls such as
/// ``SocketServer/stopAccepting()``; never call those from a loop thread).
final class LoopSemaphore: Sendable {
    private let descriptor: Int32 = eventfd(0, Int32(EFD_CLOEXEC))

    deinit { close(descriptor) }

    func signal() {
        eventfd_write(descriptor, 1)
    }

    func wait() {
        var value: eventfd_t = 0
        _ = eventfd_read(descriptor, &value)
    }
}
