import CLinuxIO
import Glibc

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
