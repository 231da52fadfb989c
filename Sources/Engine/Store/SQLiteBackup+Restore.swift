/// Restore: a backup file becomes a store file again, the way a backup was made.
extension SQLiteBackup {
    /// Copies the backup `file` to `storePath` (a store file of a data directory, not yet there) and
    /// returns its scopes. The copy goes through the backup API as well, so a `file` that still
    /// has a WAL beside it is read with it; it is checked, fsynced and renamed into place.
    ///
    /// Holds the store's lock meanwhile: a gateway started on the target during the restore
    /// refuses to open it, and a gateway serving the target makes the restore refuse. Refuses a
    /// target with any file of a store: a stale `-wal` beside the restored file would be replayed
    /// into it by SQLite, and an existing store is never overwritten (remove it first).
    public static func restore(_ file: String, toStore storePath: String) throws(SQLiteBackupError) -> SQLiteBackup {
        try checkSource(file)
        let lock: StoreLock
        do {
            lock = try StoreLock(storePath: storePath)
        } catch {
            guard case .openFailed(_, let message) = error, message.hasPrefix("another process") else {
                throw .io(path: storePath + ".lock", operation: "lock", message: "\(error)")
            }
            // StoreLock's advice after the `;` is for a second gateway, not for a restore.
            throw .targetInUse(path: storePath, message: String(message.prefix { $0 != ";" }))
        }
        defer { lock.release() }
        let present = ["", "-wal", "-shm", "-journal"].map { storePath + $0 }.filter { fileExists($0) }
        guard present.isEmpty else { throw .targetOccupied(path: storePath, files: present) }
        let scopes = try copyDatabase(from: file, to: storePath, replacing: false)
        return SQLiteBackup(file: storePath, scopes: scopes, bytes: fileSize(storePath))
    }
}
