import CSQLite

/// A value that can be bound to a statement parameter.
protocol SQLiteBindable {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32
}

extension Int64: SQLiteBindable {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, self) }
}

extension Int: SQLiteBindable {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        sqlite3_bind_int64(statement, index, Int64(self))
    }
}

extension String: SQLiteBindable {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        var copy = self
        return copy.withUTF8 { utf8 in
            // An empty buffer may have no base address, which SQLite would bind as NULL.
            guard let base = utf8.baseAddress, utf8.count > 0 else {
                return sqlite3_bind_text(statement, index, "", 0, csqlite_transient())
            }
            return sqlite3_bind_text(statement, index, base, Int32(utf8.count), csqlite_transient())
        }
    }
}

extension Array: SQLiteBindable where Element == UInt8 {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_zeroblob(statement, index, 0)
            }
            return sqlite3_bind_blob(statement, index, base, Int32(bytes.count), csqlite_transient())
        }
    }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .some(let value): value.bind(to: statement, at: index)
        case .none: sqlite3_bind_null(statement, index)
        }
    }
}
