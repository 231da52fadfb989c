#if canImport(Glibc)
import Glibc
#endif
#if canImport(Musl)
import Musl
#endif
#if canImport(Darwin)
import Darwin
#endif

/// One open file of the client's storage, by its descriptor: the few POSIX calls the storage
/// needs (Foundation's `FileHandle` has no `flock`, and its atomic writes do not `fsync`).
struct StorageFile: ~Copyable, Sendable {
    let path: String
    private let descriptor: Int32

    /// Opens (creating it when missing) `path` for reading and writing.
    init(path: String) throws(StorageFileError) {
        self.path = path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StorageFileError(operation: "open", path: path, code: errno) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Takes the exclusive lock on this file, or fails at once when another descriptor holds it —
    /// another process, or another sync of this process.
    func lockExclusively() throws(StorageFileError) {
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            throw StorageFileError(operation: "lock", path: path, code: errno)
        }
    }

    /// Lets the lock go (the descriptor stays open until this value ends).
    func unlock() {
        _ = flock(descriptor, LOCK_UN)
    }

    func readAll() throws(StorageFileError) -> [UInt8] {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw StorageFileError(operation: "seek", path: path, code: errno)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StorageFileError(operation: "read", path: path, code: errno)
            }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }

    /// Writes all of `bytes` at the end of the file.
    func append(_ bytes: [UInt8]) throws(StorageFileError) {
        guard lseek(descriptor, 0, SEEK_END) >= 0 else {
            throw StorageFileError(operation: "seek", path: path, code: errno)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StorageFileError(operation: "write", path: path, code: errno)
            }
            written += count
        }
    }

    func truncate(to length: Int) throws(StorageFileError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else {
            throw StorageFileError(operation: "truncate", path: path, code: errno)
        }
    }

    func synchronize() throws(StorageFileError) {
        guard fsync(descriptor) == 0 else { throw StorageFileError(operation: "fsync", path: path, code: errno) }
    }

    /// Replaces the file at `path` with `bytes` so that a crash leaves either the old file or the
    /// new one whole: a temporary file beside it, `fsync`, `rename`, `fsync` of the directory.
    static func replace(_ path: String, with bytes: [UInt8]) throws(StorageFileError) {
        let temporary = path + ".new"
        do {
            let file = try StorageFile(path: temporary)
            try file.truncate(to: 0)
            try file.append(bytes)
            try file.synchronize()
        }
        guard rename(temporary, path) == 0 else { throw StorageFileError(operation: "rename", path: path, code: errno) }
        try synchronizeDirectory(of: path)
    }

    /// Moves a file aside (`rename`); false when there was none.
    static func move(_ path: String, to destination: String) throws(StorageFileError) -> Bool {
        if rename(path, destination) == 0 { return true }
        if errno == ENOENT { return false }
        throw StorageFileError(operation: "rename", path: path, code: errno)
    }

    /// Makes a rename in the directory of `path` durable.
    private static func synchronizeDirectory(of path: String) throws(StorageFileError) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageFileError(operation: "open", path: directory, code: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StorageFileError(operation: "fsync", path: directory, code: errno) }
    }
}

/// A failed call on a storage file: what was tried, on which file, and the system's reason.
struct StorageFileError: Error, Sendable, CustomStringConvertible {
    let operation: String
    let path: String
    let code: Int32

    var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}
