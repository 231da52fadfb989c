/// The SQLite schema (version 1) and the pragmas each connection runs. Described in `docs/store.md`.
enum SQLiteSchema {
    static let version = 1

    /// `synchronous=FULL` in WAL mode fsyncs the WAL on every COMMIT: a committed change set survives a
    /// power cut, not only a process crash. Checkpoints are run by the commit thread between batches.
    /// `journal_size_limit` (72 MiB) is above the WAL's size at a checkpoint (16384 frames of 4 KiB
    /// and their headers, 64.4 MiB): a WAL restarted after a checkpoint keeps its blocks, and
    /// commits overwrite them instead of growing the file again.
    static let writerPragmas = """
        PRAGMA synchronous=FULL;
        PRAGMA wal_autocheckpoint=0;
        PRAGMA journal_size_limit=75497472;
        PRAGMA foreign_keys=OFF;
        """

    static let readerPragmas = "PRAGMA query_only=1;"

    static let create = """
        CREATE TABLE scopes(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            root_class TEXT NOT NULL,
            root_uuid TEXT NOT NULL,
            version INTEGER NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE changes(
            scope_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            payload BLOB NOT NULL,
            PRIMARY KEY(scope_id, version)
        );
        CREATE TABLE snapshots(
            scope_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            payload BLOB NOT NULL,
            PRIMARY KEY(scope_id, version)
        );
        CREATE TABLE idempotency(
            scope_id INTEGER NOT NULL,
            key TEXT NOT NULL,
            request_digest BLOB NOT NULL,
            status INTEGER NOT NULL,
            response BLOB NOT NULL,
            version INTEGER,
            created_at INTEGER NOT NULL,
            UNIQUE(scope_id, key)
        );
        CREATE INDEX idempotency_created_at ON idempotency(created_at);
        PRAGMA user_version=1;
        """

    /// What the store keeps about itself, by key: `schema` is the record of the model schema it
    /// was last served with (see `docs/schema-evolution.md`).
    static let metadata = "CREATE TABLE IF NOT EXISTS metadata(key TEXT PRIMARY KEY, value BLOB NOT NULL)"

    /// Switches to WAL and creates the tables on first use; refuses a file of another schema version.
    static func prepare(_ connection: SQLiteConnection) throws(StoreError) {
        let mode = try connection.scalarText("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw .openFailed(
                path: connection.path, message: "cannot switch to WAL mode (journal_mode is \(mode ?? "?"))")
        }
        try connection.execute(writerPragmas)
        try connection.execute("BEGIN IMMEDIATE")
        do throws(StoreError) {
            let found = Int(try connection.scalarText("PRAGMA user_version") ?? "0") ?? 0
            switch found {
            case 0: try connection.execute(create)
            case version: break
            default:
                throw StoreError.corrupt(
                    path: connection.path, message: "schema version \(found) is not the supported \(version)")
            }
            // Added after version 1 shipped; older files gain it here, and older binaries ignore it.
            try connection.execute(metadata)
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }
}
