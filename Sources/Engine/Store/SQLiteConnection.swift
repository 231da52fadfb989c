import CSQLite

/// One SQLite connection with a cache of prepared statements.
///
/// Not `Sendable`: a connection is confined to one thread at a time — the writer lives on the commit
/// thread that opened it, the reader is only touched under ``SQLiteStore``'s mutex.
final class SQLiteConnection {
    let path: String
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]
    /// Frames in the WAL after the last commit, written by SQLite's WAL hook (see ``trackWALSize()``).
    private let walFrames = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw .openFailed(path: path, message: message)
        }
        self.path = path
        self.handle = db
        walFrames.initialize(to: 0)
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
        walFrames.deallocate()
    }

    /// Keeps ``walFrameCount`` current after every commit. Replaces SQLite's automatic checkpoints, which
    /// use the same hook: the writer checkpoints by itself, after answering the batch.
    func trackWALSize() {
        sqlite3_wal_hook(handle, WALHook.recordFrames, walFrames)
    }

    var walFrameCount: Int { Int(walFrames.pointee) }

    /// Runs SQL without results (pragmas that return a row are stepped through and ignored).
    func execute(_ sql: String) throws(StoreError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw error(code: rc, operation: sql, message: message)
        }
    }

    /// The cached prepared statement for `sql`, reset and with its bindings cleared.
    func statement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else {
            throw error(code: rc, operation: "prepare \(sql)", message: lastErrorMessage)
        }
        let statement = SQLiteStatement(raw, connection: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Runs a pragma or query and returns the first column of its first row as text.
    func scalarText(_ sql: String) throws(StoreError) -> String? {
        let statement = try statement(sql)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    var changes: Int { Int(sqlite3_changes(handle)) }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open (SQLite rolls one back by itself after some I/O errors).
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Maps a failing result code to the right ``StoreError``: a file that is not a database or is
    /// damaged is `corrupt`, everything else names the statement.
    func error(code: Int32, operation: String, message: String) -> StoreError {
        switch code & 0xff {
        case SQLITE_NOTADB, SQLITE_CORRUPT: .corrupt(path: path, message: message)
        default: .sqlite(operation: operation, code: code, message: message)
        }
    }
}

/// The WAL hook: stores the frame count where the connection's context pointer points.
enum WALHook {
    static let recordFrames:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32)
            -> Int32 = { context, _, _, frames in
                context?.assumingMemoryBound(to: Int32.self).pointee = frames
                return SQLITE_OK
            }
}
