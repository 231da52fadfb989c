import Glibc

/// The file-system steps of a backup: a partial file beside the destination, fsync, a rename that
/// does not replace unless asked, fsync of the directory.
extension SQLiteBackup {
    /// Creates the empty partial file `.<name>.partial-<pid>` in the destination's directory — the
    /// same file system, so the final rename is atomic. A leftover of the same name (an earlier run
    /// with this pid that was killed) is garbage and is replaced.
    static func claimPartialFile(for destination: String) throws(SQLiteBackupError) -> String {
        let (directory, name) = split(destination)
        guard !name.isEmpty else { throw .io(path: destination, operation: "name", message: "no file name") }
        let partial = "\(directory)/.\(name).partial-\(getpid())"
        removePartialFile(partial)
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .io(path: partial, operation: "create", message: lastError()) }
        close(descriptor)
        return partial
    }

    /// Removes a partial file and whatever SQLite may have put beside it.
    static func removePartialFile(_ partial: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(partial + suffix) }
    }

    /// Renames `partial` to `destination`. Without `replacing`, a destination that appeared since
    /// the first check is not overwritten: `link(2)` fails on an existing name where `rename(2)`
    /// would replace it. A file system without hard links falls back to check-then-rename.
    static func moveIntoPlace(_ partial: String, _ destination: String, replacing: Bool) throws(SQLiteBackupError) {
        if !replacing {
            if link(partial, destination) == 0 {
                unlink(partial)
                return
            }
            let code = errno
            if code == EEXIST { throw .destinationExists(path: destination) }
            guard [EPERM, ENOTSUP, EOPNOTSUPP, EMLINK].contains(code) else {
                throw .io(path: destination, operation: "link", message: String(cString: strerror(code)))
            }
            if fileExists(destination) { throw .destinationExists(path: destination) }
        }
        guard rename(partial, destination) == 0 else {
            throw .io(path: destination, operation: "rename", message: lastError())
        }
    }

    /// fsync(2) of a file's data and size.
    static func syncFile(_ path: String) throws(SQLiteBackupError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(path: path, operation: "open", message: lastError()) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .io(path: path, operation: "fsync", message: lastError()) }
    }

    /// fsync(2) of the directory holding `path`, so that its new name survives a power cut too.
    static func syncDirectory(of path: String) throws(SQLiteBackupError) {
        let directory = split(path).directory
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io(path: directory, operation: "open", message: lastError()) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .io(path: directory, operation: "fsync", message: lastError()) }
    }

    static func fileStatus(_ path: String) -> stat? {
        var status = stat()
        return stat(path, &status) == 0 ? status : nil
    }

    static func fileExists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    static func fileSize(_ path: String) -> Int64 { Int64(fileStatus(path)?.st_size ?? 0) }

    /// The directory part (`.` when none) and the last component of a path.
    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    private static func lastError() -> String { String(cString: strerror(errno)) }
}
