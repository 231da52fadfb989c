import CSQLite
import Glibc

/// An online backup of the embedded store, and its restore (`docs/backups.md`).
///
/// ``copy(store:to:replacing:)`` copies a store file while a gateway serves it and writes to it,
/// without taking the store's lock (the gateway holds it): it opens the file read-only and copies
/// every page with SQLite's online backup API inside one read transaction, so the copy is the
/// store as it was at one instant — every scope at the version it had then, with its log,
/// snapshots and idempotency records. The copy is one self-contained SQLite file (no WAL beside
/// it), written beside the destination, checked, fsynced and only then renamed into place: the
/// destination is either absent or whole. ``restore(_:toStore:)`` puts such a file in place as a
/// store file, the same way.
///
/// ```swift
/// let backup = try SQLiteBackup.copy(store: "data/jetstream.sqlite", to: "/backups/nightly.sqlite")
/// for scope in backup.scopes { print(scope.name, scope.version) }
/// _ = try SQLiteBackup.restore("/backups/nightly.sqlite", toStore: "data2/jetstream.sqlite")
/// ```
///
/// Why the backup API and not `VACUUM INTO`: both read in one read transaction, so both are
/// consistent beside a WAL-mode writer (a WAL reader keeps the snapshot it started with while the
/// writer appends to the WAL, and a checkpoint never copies a page past the oldest reader's mark
/// into the database file). `VACUUM INTO` rebuilds every table and index of the copy, CPU and I/O
/// in proportion to the whole store, on the machine that is serving; the backup API copies pages
/// as they are. It is run as one step of all pages (`sqlite3_backup_step(-1)`): stepped in
/// pieces, a write by the gateway between two steps would restart the copy from the beginning,
/// and under constant writes it might never finish. The price of one step is that the read
/// transaction pins the WAL for the length of the copy: the gateway's checkpoints cannot pass it,
/// so its WAL grows by what is written meanwhile and is checkpointed after.
public struct SQLiteBackup: Sendable, Hashable {
    /// A live scope in a copy and the version it is at there.
    public struct Scope: Sendable, Hashable {
        public var name: String
        public var version: Int64

        public init(name: String, version: Int64) {
            self.name = name
            self.version = version
        }
    }

    /// The file written: the backup file, or the restored store file.
    public let file: String
    /// Every live scope in it (deleted ones are not listed) and its version, in name order.
    public let scopes: [Scope]
    /// The size of the file written, in bytes.
    public let bytes: Int64

    /// Copies the store file at `storePath` — served or not — to `file`, consistently; see the type.
    /// Refuses when there is no store at `storePath`, when it is not a store, and when `file`
    /// exists and `replacing` is false.
    public static func copy(
        store storePath: String, to file: String, replacing: Bool = false
    ) throws(SQLiteBackupError) -> SQLiteBackup {
        try checkSource(storePath)
        if !replacing, fileExists(file) { throw .destinationExists(path: file) }
        let scopes = try copyDatabase(from: storePath, to: file, replacing: replacing)
        return SQLiteBackup(file: file, scopes: scopes, bytes: fileSize(file))
    }

    /// Copies the database at `source` to `destination` through a partial file beside it; returns
    /// the live scopes of the copy. Nothing is left at `destination` or beside it on failure.
    static func copyDatabase(
        from source: String, to destination: String, replacing: Bool
    ) throws(SQLiteBackupError) -> [Scope] {
        let partial = try claimPartialFile(for: destination)
        do throws(SQLiteBackupError) {
            try copyPages(from: source, to: partial)
            // The copy is read before the rename: a file that fails here never reaches `destination`.
            // The rename changes no byte, so these are the scopes of the file put in place.
            let scopes = try verifiedScopes(of: partial)
            try syncFile(partial)
            try moveIntoPlace(partial, destination, replacing: replacing)
            try syncDirectory(of: destination)
            return scopes
        } catch {
            removePartialFile(partial)
            throw error
        }
    }

    /// Every page of `source`, as of one read transaction, into the empty file `partial`.
    private static func copyPages(from sourcePath: String, to partial: String) throws(SQLiteBackupError) {
        let source = try SQLiteDatabaseFile(path: sourcePath, writable: false)
        let copy = try SQLiteDatabaseFile(path: partial, writable: true)
        // No journal and no syncs while the copy is written: a torn copy is deleted, never used,
        // and the finished file is fsynced once, before its rename.
        try copy.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF")
        // The read transaction that fixes the instant copied: its first read (the schema check)
        // takes the WAL snapshot, and sqlite3_backup_step runs inside it instead of opening its own.
        try source.execute("BEGIN")
        defer { try? source.execute("ROLLBACK") }
        try source.checkIsStore()
        guard let backup = sqlite3_backup_init(copy.handle, "main", source.handle, "main") else {
            throw copy.error(
                code: sqlite3_extended_errcode(copy.handle), operation: "sqlite3_backup_init",
                message: copy.lastErrorMessage)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        // Errors of the step are reported on the destination connection, also after finish.
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE else {
            throw source.error(code: stepped, operation: "sqlite3_backup_step", message: copy.lastErrorMessage)
        }
        guard finished == SQLITE_OK else {
            throw copy.error(code: finished, operation: "sqlite3_backup_finish", message: copy.lastErrorMessage)
        }
        // The pages carry the live file's WAL flag. Back to a rollback journal, so that the copy
        // stands alone: opening it (read-only, too) creates no -wal or -shm beside it. The gateway
        // switches a restored store to WAL again when it opens it.
        let mode = try copy.scalar("PRAGMA journal_mode=DELETE")
        guard mode?.lowercased() == "delete" else {
            throw .sqlite(
                path: partial, operation: "PRAGMA journal_mode=DELETE", code: SQLITE_ERROR,
                message: "the copy stayed in journal mode \(mode ?? "?")")
        }
    }

    /// The live scopes of a finished copy, once SQLite's `quick_check` found every page sound
    /// (the backup API copies pages faithfully, damaged ones included).
    static func verifiedScopes(of path: String) throws(SQLiteBackupError) -> [Scope] {
        let copy = try SQLiteDatabaseFile(path: path, writable: false)
        try copy.execute("BEGIN")
        defer { try? copy.execute("ROLLBACK") }
        try copy.checkIsStore()
        let problems = try copy.rows("PRAGMA quick_check").compactMap { $0.first ?? nil }
        guard problems == ["ok"] else {
            throw .notAStore(
                path: path, message: "integrity check: \(problems.prefix(5).joined(separator: "; "))")
        }
        return try copy.liveScopes()
    }

    /// Refuses a source that is missing, not a regular file, or empty (SQLite reads an empty file
    /// as an empty database, which would make an empty "backup" of a truncated store).
    static func checkSource(_ path: String) throws(SQLiteBackupError) {
        guard let status = fileStatus(path) else { throw .storeMissing(path: path) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw .notAStore(path: path, message: "it is not a regular file")
        }
        guard status.st_size > 0 else { throw .notAStore(path: path, message: "the file is empty (0 bytes)") }
    }
}
