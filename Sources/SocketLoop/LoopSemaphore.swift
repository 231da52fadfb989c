import CLinuxIO
import Glibc
import Synchronization

/// A one-shot wait for work done on loop threads (used by blocking control calls).
final class LoopSemaphore: Sendable {
    private let signalled = Mutex(false)
    private let descriptor: Int32 = eventfd(0, Int32(EFD_CLOEXEC))

    deinit { close(descriptor) }

    func signal() {
        eventfd_write(descriptor, 1)
    }

    func wait() {
        var value: eventfd_t = 0
        _ = eventfd_read(descriptor, &value)
        signalled.withLock { $0 = true }
    }
}
