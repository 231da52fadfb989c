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
