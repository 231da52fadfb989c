import CSQLite

/// A prepared statement: bind parameters (1-based), step through rows, read columns (0-based).
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection
    let sql: String

    init(_ handle: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    @discardableResult
    func bind(_ values: any SQLiteBindable...) throws(StoreError) -> SQLiteStatement {
        for (offset, value) in values.enumerated() {
            let rc = value.bind(to: handle, at: Int32(offset + 1))
            guard rc == SQLITE_OK else {
                throw connection.error(code: rc, operation: "bind \(sql)", message: connection.lastErrorMessage)
            }
        }
        return self
    }

    /// Advances to the next row: `true` when one is available, `false` when done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = connection.lastErrorMessage
            sqlite3_reset(handle)
            throw connection.error(code: rc, operation: sql, message: message)
        }
    }

    /// Steps a statement that returns no rows, then resets it.
    func run() throws(StoreError) {
        defer { reset() }
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
