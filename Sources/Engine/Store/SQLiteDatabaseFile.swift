import CSQLite

/// A bare SQLite connection for ``SQLiteBackup``: the live store opened read-only (no lock, no
/// pragma that writes), or a copy being written. Unlike ``SQLiteConnection`` it chooses its open
/// flags (never `SQLITE_OPEN_CREATE`, so a wrong path is never turned into an empty store) and
/// hands its handle to the online backup API.
///
/// Not `Sendable`: used by one call from open to close.
final class SQLiteDatabaseFile {
    let path: String
    let handle: OpaquePointer

    /// Opens the existing file at `path`, read-only unless `writable`.
    init(path: String, writable: Bool) throws(SQLiteBackupError) {
        var db: OpaquePointer?
        let flags = (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw .sqlite(path: path, operation: "open", code: rc, message: message)
        }
        self.path = path
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // The gateway's commit thread may hold the WAL briefly (a checkpoint, a WAL restart); wait
        // as its own connections do rather than fail.
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs SQL whose rows, if any, do not matter.
    func execute(_ sql: String) throws(SQLiteBackupError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        guard rc == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw error(code: rc, operation: sql, message: message)
        }
    }

    /// Every row of a query, each column as text (`nil` for NULL).
    func rows(_ sql: String) throws(SQLiteBackupError) -> [[String?]] {
        var raw: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard prepared == SQLITE_OK, let statement = raw else {
            throw error(code: prepared, operation: sql, message: lastErrorMessage)
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String?]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return rows }
            guard rc == SQLITE_ROW else { throw error(code: rc, operation: sql, message: lastErrorMessage) }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    sqlite3_column_text(statement, column).map { String(cString: $0) }
                })
        }
    }

    /// The first column of the first row, if any.
    func scalar(_ sql: String) throws(SQLiteBackupError) -> String? {
        try rows(sql).first?.first ?? nil
    }

    /// Refuses a file that is not a store of this schema version (read in the caller's transaction).
    func checkIsStore() throws(SQLiteBackupError) {
        let found = Int(try scalar("PRAGMA user_version") ?? "0") ?? 0
        guard found == SQLiteSchema.version else {
            throw .notAStore(
                path: path,
                message: found == 0
                    ? "it has no Jetstream schema"
                    : "schema version \(found) is not the supported \(SQLiteSchema.version)")
        }
    }

    /// Every live scope (not the tombstones of deleted ones) and its current version, in name order.
    func liveScopes() throws(SQLiteBackupError) -> [SQLiteBackup.Scope] {
        try rows("SELECT name, version FROM scopes WHERE deleted = 0 ORDER BY name").map { row in
            SQLiteBackup.Scope(name: row[0] ?? "", version: Int64(row[1] ?? "") ?? -1)
        }
    }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// A file that is not a database, or a damaged one, is not a store; anything else names the call.
    func error(code: Int32, operation: String, message: String) -> SQLiteBackupError {
        switch code & 0xff {
        case SQLITE_NOTADB, SQLITE_CORRUPT: .notAStore(path: path, message: message)
        default: .sqlite(path: path, operation: operation, code: code, message: message)
        }
    }
}
