import PostgresStore
import Store
import TestSupport
import Testing

/// The implementations of ``ChangeLogStore`` that the contract suites run against: every
/// behaviour `docs/store.md` promises of "every implementation" is one test with
/// `@Test(arguments: StoreKind.allCases)`, run once per kind.
///
/// ```swift
/// @Test(arguments: StoreKind.allCases) func roundTrip(kind: StoreKind) async throws {
///     try await withStore(kind) { store in _ = try await store.createScope(descriptor("a"), snapshot: []) }
/// }
/// ```
///
/// Where the stores legitimately differ a test switches on the kind and says why; SQLite's own
/// behaviour (the file, its lock, the commit thread) is tested in the `SQLite…` suites, the
/// shared database's (two nodes on one database) in `PostgresSharedStoreTests`.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// ``SQLiteStore`` on a file in a fresh temporary directory.
    case sqlite
    /// ``PostgresStore`` on a fresh database of the test process's own server (``PostgresTestCluster``).
    case postgres

    var testDescription: String { rawValue }

    /// Opens a store of this kind at `address` (a file path, or a PostgreSQL URL).
    func open(at address: String, settings: StoreSettings) throws -> any ChangeLogStore {
        switch self {
        case .sqlite: try SQLiteStore(path: address, configuration: settings.sqlite)
        case .postgres: try PostgresStore(url: address, configuration: settings.postgres)
        }
    }
}
