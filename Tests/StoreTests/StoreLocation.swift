import PostgresStore
import Store
import TestSupport

/// Where one test's store lives — a file in a fresh temporary directory, or a fresh database on the
/// test cluster — so that the test can open it, close it and open it again, as a gateway restarts
/// on the same data (SQLite) or the same database (PostgreSQL).
///
/// ```swift
/// try await withStoreLocation(kind) { location in
///     do { let store = try location.open(); defer { store.close() }; … }
///     let reopened = try location.open()
///     defer { reopened.close() }
/// }
/// ```
struct StoreLocation: Sendable {
    let kind: StoreKind
    /// The SQLite file's path, or the PostgreSQL database's URL.
    let address: String
    /// The PostgreSQL database's name (for `psql`), nil for SQLite.
    var database: String?
    var settings: StoreSettings

    /// A new store on this location (a second one at once is refused for SQLite, a second node for PostgreSQL).
    func open() throws -> any ChangeLogStore {
        try kind.open(at: address, settings: settings)
    }

    /// A new PostgreSQL store on this location's database: one more node sharing it.
    func openPostgres() throws -> PostgresStore {
        precondition(kind == .postgres, "openPostgres() on a \(kind) location")
        return try PostgresStore(url: address, configuration: settings.postgres)
    }
}

/// Runs `body` with a new, empty location of `kind`: a temporary directory (removed after) or a new
/// database on the test process's PostgreSQL server (dropped after; the server starts on first use).
func withStoreLocation<Value>(
    _ kind: StoreKind, settings: StoreSettings = StoreSettings(), _ body: (StoreLocation) async throws -> Value
) async throws -> Value {
    switch kind {
    case .sqlite:
        return try await withTemporaryDirectory { directory in
            try await body(
                StoreLocation(kind: kind, address: directory + "/store.sqlite", database: nil, settings: settings))
        }
    case .postgres:
        let cluster = try await PostgresTestCluster.shared()
        let database = try await cluster.createDatabase()
        defer { cluster.dropDatabase(database) }
        return try await body(
            StoreLocation(kind: kind, address: cluster.url(database: database), database: database, settings: settings))
    }
}

/// Opens a store of `kind` on a new, empty location, runs `body`, closes the store.
func withStore<Value>(
    _ kind: StoreKind, settings: StoreSettings = StoreSettings(), _ body: (any ChangeLogStore) async throws -> Value
) async throws -> Value {
    try await withStoreLocation(kind, settings: settings) { location in
        let store = try location.open()
        defer { store.close() }
        return try await body(store)
    }
}
