import Glibc
import Synchronization

/// An exclusive lock on a store file, held while the store is open, so that a second gateway on
/// the same data directory refuses to start instead of serving stale state beside the first.
///
/// It is an `flock` on `<store path>.lock`, which also names the holder's process id for the error
/// message. The kernel releases it when the process ends, however it ends, so a crash never leaves
/// a stale lock behind.
///
/// ```swift
/// let lock = try StoreLock(storePath: "data/jetstream.sqlite")   // throws openFailed when held
/// lock.release()
/// ```
final class StoreLock: Sendable {
    let path: String
    private let descriptor: Mutex<Int32>

    init(storePath: String) throws(StoreError) {
        path = storePath + ".lock"
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard opened >= 0 else {
            throw .openFailed(
                path: storePath, message: "cannot open its lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard Self.lock(opened, path: path) else {
            let code = errno
            let holder = Self.holder(of: opened)
            close(opened)
            guard code == EWOULDBLOCK else {
                throw .openFailed(path: storePath, message: "cannot lock \(path): \(String(cString: strerror(code)))")
            }
            throw .openFailed(
                path: storePath,
                message: "another process\(holder.map { " (pid \($0))" } ?? "") has this store open; "
                    + "run one gateway per data directory (several nodes share PostgreSQL instead)")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(opened, 0)
        _ = pid.withUnsafeBytes { pwrite(opened, $0.baseAddress, $0.count, 0) }
        descriptor = Mutex(opened)
        Self.heldHere.withLock { _ = $0.insert(path) }
    }

    /// Lock files this process holds through an open store.
    private static let heldHere = Mutex<Set<String>>([])

    /// Takes the lock. A lock that this process's own pid holds while no store of this process
    /// has the file open is a child's copy of a closed descriptor between its fork and exec (a
    /// test that spawns tools while reopening a store): it goes within moments, so it is waited
    /// for, briefly. Any other holder fails at once.
    private static func lock(_ descriptor: Int32, path: String) -> Bool {
        for _ in 0..<100 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            let code = errno
            guard code == EWOULDBLOCK, holder(of: descriptor) == Int(getpid()),
                !heldHere.withLock({ $0.contains(path) })
            else {
                errno = code
                return false
            }
            usleep(10_000)
        }
        errno = EWOULDBLOCK
        return false
    }

    /// Releases the lock (idempotent).
    func release() {
        let held = descriptor.withLock { held in
            defer { held = -1 }
            return held
        }
        if held >= 0 {
            Self.heldHere.withLock { _ = $0.remove(path) }
            close(held)
        }
    }

    deinit { release() }

    /// The process id written by the holder, if the file has one.
    private static func holder(of descriptor: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[0..<count].prefix { (0x30...0x39).contains($0) }, as: UTF8.self))
    }
}
