/// Why an ``SQLiteBackup`` (a backup or a restore) did not happen, each case naming what to fix.
/// Whatever the case, no file was left at the destination: the copy is written beside it and only
/// renamed into place once whole and synced.
///
/// ```swift
/// do { _ = try SQLiteBackup.copy(store: "data/jetstream.sqlite", to: "nightly.sqlite") }
/// catch .destinationExists(let path) { print("\(path) exists; choose another name") }
/// ```
public enum SQLiteBackupError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no store file at the path: a wrong data directory, or a gateway that stores in
    /// PostgreSQL (whose backups are `pg_dump`'s).
    case storeMissing(path: String)
    /// The file is not a store of this gateway: not SQLite, empty, another schema version, or damaged.
    case notAStore(path: String, message: String)
    /// The backup file (or the restored store file) exists and replacing it was not asked for.
    case destinationExists(path: String)
    /// A restore found files of a store at the target (its WAL or shared-memory file alone would be
    /// replayed into the restored file by SQLite, so they count too).
    case targetOccupied(path: String, files: [String])
    /// A restore's target store is open in a running process (a gateway serves it).
    case targetInUse(path: String, message: String)
    /// An SQLite call failed: the file, the call, SQLite's extended result code and its message.
    case sqlite(path: String, operation: String, code: Int32, message: String)
    /// A file-system call failed: the file, the call and `strerror`.
    case io(path: String, operation: String, message: String)

    public var description: String {
        switch self {
        case .storeMissing(let path):
            "no store at \(path)"
        case .notAStore(let path, let message):
            "\(path) is not a Jetstream store: \(message)"
        case .destinationExists(let path):
            "\(path) exists already"
        case .targetOccupied(let path, let files):
            "the target \(path) already holds a store (\(files.joined(separator: ", "))); "
                + "restore into an empty data directory, or remove the store first"
        case .targetInUse(let path, let message):
            "the target \(path) is in use: \(message); stop the gateway serving it first"
        case .sqlite(let path, let operation, let code, let message):
            "SQLite error \(code) during \(operation) on \(path): \(message)"
        case .io(let path, let operation, let message):
            "\(operation) \(path) failed: \(message)"
        }
    }
}
