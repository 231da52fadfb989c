import CLinuxIO
import Glibc

extension Connection {
    private static let maxIOVectors = 64

    /// Writes queued slices with `writev` until done or the kernel refuses more.
    func flush() {
        isQueuedForFlush = false
        // A connecting socket is flushed once established (EventLoop.finishConnecting).
        guard !isClosed, !isConnecting else { return }
        let wasBlocked = isWriteBlocked
        let finished = withUnsafeTemporaryAllocation(of: iovec.self, capacity: Self.maxIOVectors) { vectors in
            while pendingHead < pending.count {
                var vectorCount = 0
                var position = pendingHead
                while position < pending.count, vectorCount < Self.maxIOVectors {
                    let slice = pending[position]
                    vectors[vectorCount] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: slice.startAddress), iov_len: slice.count)
                    vectorCount += 1
                    position += 1
                }
                let written = writev(fileDescriptor, vectors.baseAddress, Int32(vectorCount))
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    if code == EAGAIN || code == EWOULDBLOCK {
                        isWriteBlocked = true
                        kernelQueuedBytes = Int(clinuxio_unsent_bytes(fileDescriptor))
                        return false
                    }
                    fail(SocketError(operation: "write", code: code))
                    return false
                }
                consume(written)
            }
            return true
        }
        guard finished else { return }
        pending.removeAll(keepingCapacity: pending.capacity <= 64)
        pendingHead = 0
        isWriteBlocked = false
        didDrainAfterLimit()
        if lingerState == .closeAfterFlush {
            beginLinger()
        } else if wasBlocked {
            handler?.connectionDidDrain(self)
        }
    }

    private func consume(_ written: Int) {
        var remaining = written
        pendingBytes -= written
        if written > 0 { lastWriteProgress = loop.now }
        while remaining > 0 {
            let first = pending[pendingHead].count
            if remaining >= first {
                remaining -= first
                // Free the written buffer now (a large body, and the budget charge it carries).
                pending[pendingHead] = Self.written
                pendingHead += 1
            } else {
                pending[pendingHead].removeFirst(remaining)
                remaining = 0
            }
        }
        if pendingHead > 32, pendingHead * 2 > pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
    }
}

extension Connection {
    /// Stands in for a slice already written, so its buffer is freed at once.
    static let written = ByteSlice(SharedBytes([]))

    /// Whether a write-blocked connection's peer has taken none of its bytes for `timeout`: no
    /// `writev` progress, and the kernel's send queue has not shrunk either (checked here, only
    /// for connections already past the timeout, and remembered as progress when it has).
    func hasStalled(now: LoopInstant, timeout: Duration) -> Bool {
        guard isWriteBlocked, !isClosed, lastWriteProgress.advanced(by: timeout) <= now else { return false }
        let queued = Int(clinuxio_unsent_bytes(fileDescriptor))
        if queued >= 0, kernelQueuedBytes >= 0, queued < kernelQueuedBytes {
            kernelQueuedBytes = queued
            lastWriteProgress = now
            return false
        }
        return true
    }

    /// Writes what is queued now instead of at the end of the loop iteration.
    public func flushNow() {
        guard !isClosed, pendingBytes > 0, !isWriteBlocked else { return }
        flush()
    }
}
