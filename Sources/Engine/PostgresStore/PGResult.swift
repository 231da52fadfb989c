import CLibPQ
import Store

#if canImport(Glibc)
import Glibc
#endif

/// A `PGresult` read in binary format; freed when the last reference goes.
///
/// ```swift
/// let result = try connection.query(statement, [.text(name)])
/// let version = result.int64(row: 0, column: 0)
/// ```
final class PGResult {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { PQclear(raw) }

    var status: ExecStatusType { PQresultStatus(raw) }
    var rowCount: Int { Int(PQntuples(raw)) }

    /// Rows a DELETE/UPDATE/INSERT touched.
    var affectedRows: Int { PQcmdTuples(raw).flatMap { Int(String(cString: $0)) } ?? 0 }

    /// Throws the server's error for a failed statement (or one skipped after an earlier failure in
    /// its pipeline).
    func check(operation: String) throws(StoreError) {
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_PIPELINE_SYNC, PGRES_EMPTY_QUERY: return
        case PGRES_PIPELINE_ABORTED:
            throw .postgres(operation: operation, sqlState: "", message: "skipped: an earlier statement failed")
        default:
            let state = PQresultErrorField(raw, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = PQresultErrorMessage(raw).map { String(cString: $0).trimmingTrailingWhitespace() } ?? ""
            // Connection-level failures carry no SQLSTATE (or class 08): the database is unreachable.
            if state.isEmpty || state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" {
                throw .unavailable(message.isEmpty ? "\(operation) failed" : message)
            }
            // 25006: a standby, or a primary still in recovery. It may be promoted later: not a
            // fault of the statement, and the fix is in the connection string.
            if state == "25006" {
                throw .unavailable(
                    "\(message) — this database server is read-only (a standby?): name its primary, or list "
                        + "every server in --database-url with target_session_attrs=read-write")
            }
            throw .postgres(operation: operation, sqlState: state, message: message)
        }
    }

    func isNull(row: Int, column: Int) -> Bool { PQgetisnull(raw, Int32(row), Int32(column)) == 1 }

    func bytes(row: Int, column: Int) -> [UInt8] {
        let length = Int(PQgetlength(raw, Int32(row), Int32(column)))
        guard length > 0, let value = PQgetvalue(raw, Int32(row), Int32(column)) else { return [] }
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    func string(row: Int, column: Int) -> String { String(decoding: bytes(row: row, column: column), as: UTF8.self) }

    /// An `int8`, `int4` or `int2` column in binary format.
    func int64(row: Int, column: Int) -> Int64 {
        let bytes = bytes(row: row, column: column)
        var value: Int64 = 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        // Sign-extend the narrower integer types.
        let bits = bytes.count * 8
        if bits > 0, bits < 64, value & (1 << (bits - 1)) != 0 { value -= 1 << bits }
        return value
    }

    func optionalInt64(row: Int, column: Int) -> Int64? {
        isNull(row: row, column: column) ? nil : int64(row: row, column: column)
    }

    func bool(row: Int, column: Int) -> Bool { bytes(row: row, column: column).first == 1 }
}

/// A parameter value sent in binary format with its type's OID.
enum PGValue {
    case int64(Int64)
    case int32(Int32)
    case text(String)
    case bytes([UInt8])
    case null

    static let int8OID: UInt32 = 20
    static let int4OID: UInt32 = 23
    static let textOID: UInt32 = 25
    static let byteaOID: UInt32 = 17

    var typeOID: UInt32 {
        switch self {
        case .int64: Self.int8OID
        case .int32: Self.int4OID
        case .text: Self.textOID
        case .bytes: Self.byteaOID
        case .null: 0
        }
    }

    var encoded: [UInt8]? {
        switch self {
        case .int64(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .int32(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .text(let value): Array(value.utf8)
        case .bytes(let value): value
        case .null: nil
        }
    }

    /// Calls `body` with libpq's parallel arrays (types, values, lengths, formats: all binary).
    static func withParameters<Result>(
        _ parameters: [PGValue],
        _ body: (
            UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) -> Result
    ) -> Result {
        let encoded = parameters.map(\.encoded)
        let types = parameters.map(\.typeOID)
        let lengths = encoded.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        // One allocation per value, kept alive across the call (libpq copies them into its buffer).
        let storage: [UnsafeMutablePointer<CChar>?] = encoded.map { bytes in
            guard let bytes else { return nil }
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress {
                    UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: source.count)
                }
            }
            return pointer
        }
        defer { storage.forEach { $0?.deallocate() } }
        let values = storage.map { UnsafePointer($0) }
        return types.withUnsafeBufferPointer { types in
            values.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }
}

/// A statement prepared once per connection under a fixed name.
struct PGStatement: Sendable {
    let name: String
    let sql: String
    let parameterTypes: [UInt32]

    init(_ name: String, _ sql: String, types: [UInt32]) {
        self.name = name
        self.sql = sql
        self.parameterTypes = types
    }
}
