/// Everything that can go wrong in a ``ChangeLogStore``, each case naming what a person needs to fix it.
///
/// ```swift
/// do { try await store.append(request) } catch .versionConflict(let scope, let expected, let attempted) {
///     log.error("\(scope): expected \(expected), got \(attempted)")
/// }
/// ```
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database could not be opened or configured (permissions, missing directory, locked file).
    case openFailed(path: String, message: String)
    /// The database file is not a store of ours, or its content breaks an invariant (for example a gap in a log).
    case corrupt(path: String, message: String)
    /// An append's version is not the scope's version + 1: another writer got there first, or the caller's
    /// state is stale. Nothing was written.
    case versionConflict(scope: String, expected: Int64, attempted: Int64)
    /// A pipelined append built on a version the log does not hold (the earlier append failed, or
    /// another writer's version took its place); see ``AppendRequest/parentToken``. Nothing was written.
    case staleBase(scope: String, version: Int64)
    /// `createScope` for a name that is live.
    case scopeExists(String)
    /// The scope does not exist or was deleted.
    case scopeMissing(String)
    /// The history asked for starts before the oldest retained change set (HTTP 410, SSE `reset`).
    case historyTruncated(scope: String, after: Int64, oldestResumable: Int64)
    /// An idempotency key is already stored for this scope and has not expired.
    case idempotencyKeyExists(scope: String, key: String)
    /// An argument the store cannot accept (negative limit, snapshot version out of range …).
    case invalidArgument(String)
    /// A statement failed: which one, SQLite's (extended) result code and message.
    case sqlite(operation: String, code: Int32, message: String)
    /// A PostgreSQL statement failed: which operation, the SQLSTATE and the server's message.
    case postgres(operation: String, sqlState: String, message: String)
    /// The database cannot be reached (connection refused or lost, server restarting). A write that
    /// fails so was not acknowledged; it may or may not have committed — retry it with its
    /// idempotency key.
    case unavailable(String)
    /// The store was closed; nothing more is accepted.
    case closed

    /// A version race lost to another writer of a shared store: the append was not logged, and
    /// the same change set may succeed once validated again on the newer state.
    public var isLostRace: Bool {
        switch self {
        case .versionConflict, .staleBase: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .openFailed(let path, let message): "cannot open store at \(path): \(message)"
        case .corrupt(let path, let message): "store at \(path) is corrupt: \(message)"
        case .versionConflict(let scope, let expected, let attempted):
            "version conflict on scope '\(scope)': next version is \(expected), append tried \(attempted)"
        case .staleBase(let scope, let version):
            "version \(version) of scope '\(scope)' was built on a version the log does not hold; nothing was written"
        case .scopeExists(let name): "scope '\(name)' already exists"
        case .scopeMissing(let name): "scope '\(name)' does not exist"
        case .historyTruncated(let scope, let after, let oldest):
            "history of scope '\(scope)' after version \(after) is no longer retained (oldest resume point \(oldest))"
        case .idempotencyKeyExists(let scope, let key):
            "idempotency key '\(key)' is already stored for scope '\(scope)'"
        case .invalidArgument(let message): "invalid argument: \(message)"
        case .sqlite(let operation, let code, let message): "SQLite error \(code) during \(operation): \(message)"
        case .postgres(let operation, let sqlState, let message):
            "PostgreSQL error \(sqlState) during \(operation): \(message)"
        case .unavailable(let message): "the database is unavailable: \(message)"
        case .closed: "the store is closed"
        }
    }
}
