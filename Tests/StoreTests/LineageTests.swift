import Store
import Testing

/// Pipelined appends carry a lineage (parent token, token): a version built on one the log does not
/// hold is refused, even when its number fits.
@Suite struct LineageTests {
    /// Appends one version of scope `s`; nil when it was logged, else the store's error.
    private func append(
        _ store: any ChangeLogStore, _ version: Int64, parent: UInt64, token: UInt64
    ) async -> StoreError? {
        do throws(StoreError) {
            try await store.append(
                AppendRequest(
                    scope: "s", version: version, payload: payload("s", version), parentToken: parent, token: token))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aVersionBuiltOnTheHeadIsLoggedOneBuiltOnAnotherIsRefused(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            // The first append of a new scope has nothing to check against.
            #expect(await append(store, 1, parent: 0, token: 11) == nil)
            #expect(await append(store, 2, parent: 11, token: 12) == nil)
            // Version 3 numbered right but built on a version 2 that is not the logged one.
            #expect(await append(store, 3, parent: 99, token: 13) == .staleBase(scope: "s", version: 3))
            #expect(try await store.scope(named: "s")?.version == 2)
            #expect(await append(store, 3, parent: 12, token: 13) == nil)
            // Without a parent token only the number is checked.
            #expect(await append(store, 4, parent: 0, token: 0) == nil)
            // After an untokened version no parent token matches.
            #expect(await append(store, 5, parent: 13, token: 15) == .staleBase(scope: "s", version: 5))
            #expect(await append(store, 5, parent: 0, token: 15) == nil)
            #expect(await append(store, 6, parent: 15, token: 16) == nil)
        }
    }

    /// The stores differ here, as docs/store.md says: SQLite keeps the heads in its writer's memory
    /// (a pipeline never outlives the process), so after a restart it knows none and refuses any
    /// parent token until a version without one is logged; PostgreSQL keeps the head in the scope's
    /// row (another node may continue a pipeline), so the head survives the restart.
    @Test(arguments: StoreKind.allCases)
    func afterARestartTheHeadIsForgottenBySQLiteKeptByPostgreSQL(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try location.open()
                defer { store.close() }
                _ = try await store.createScope(descriptor("s"), snapshot: [])
                #expect(await append(store, 1, parent: 0, token: 21) == nil)
            }
            let store = try location.open()
            defer { store.close() }
            switch kind {
            case .sqlite:
                // A parent token names a version this process logged; after a restart none is known.
                #expect(await append(store, 2, parent: 21, token: 22) == .staleBase(scope: "s", version: 2))
                #expect(await append(store, 2, parent: 0, token: 22) == nil)
            case .postgres:
                #expect(await append(store, 2, parent: 21, token: 22) == nil)
            }
            #expect(await append(store, 3, parent: 22, token: 23) == nil)
            // Either way a parent that is not the head is refused after the restart.
            #expect(await append(store, 4, parent: 21, token: 24) == .staleBase(scope: "s", version: 4))
            #expect(try await store.scope(named: "s")?.version == 3)
        }
    }
}
