import PostgresStore
import Store
import TestSupport
import Testing

/// PostgreSQL keeps how far each scope's log was pruned (`scopes.pruned`, schema version 4), and a
/// snapshot's prune deletes only above it: below it every change is gone already, and a delete
/// over that range would walk the index entries of rows not yet vacuumed.
@Suite struct PostgresPruningTests {
    static var keepFive: StoreSettings {
        var settings = StoreSettings()
        settings.retainedChangeSets = 5
        return settings
    }

    private func pruned(_ scope: String, in database: String) async throws -> String {
        try await PostgresTestCluster.shared().psql(
            "SELECT pruned FROM jetstream.scopes WHERE name = '\(scope)'", database: database)
    }

    @Test func eachPruneMovesTheMarkAndARowFromBeforeTheMarkPrunesItsWholeRange() async throws {
        try await withStoreLocation(.postgres, settings: Self.keepFive) { location in
            let database = try #require(location.database)
            let store = try location.openPostgres()
            defer { store.close() }
            _ = try await store.createScope(descriptor("a"), snapshot: Array("at 0".utf8))
            try await appendVersions(store, "a", 1...30)
            #expect(try await pruned("a", in: database) == "0")
            try await store.writeSnapshot(scope: "a", version: 10, snapshot: Array("at 10".utf8))
            #expect(try await pruned("a", in: database) == "10")
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 11)
            try await store.writeSnapshot(scope: "a", version: 20, snapshot: Array("at 20".utf8))
            #expect(try await pruned("a", in: database) == "20")
            #expect(try await store.changes(scope: "a", after: 20, limit: 100).records.map(\.version) == Array(21...30))

            // A row as a database from before version 4 has it: the mark at 0 and log rows far
            // below the latest prune. The next prune deletes all of them.
            try await PostgresTestCluster.shared().psql(
                """
                UPDATE jetstream.scopes SET pruned = 0 WHERE name = 'a';
                INSERT INTO jetstream.changes (scope_id, version, payload)
                    SELECT id, v, '\\x00'::bytea FROM jetstream.scopes, (VALUES (3), (15)) AS old(v) WHERE name = 'a';
                """, database: database)
            try await appendVersions(store, "a", 31...33)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            #expect(try await pruned("a", in: database) == "28")
            let left = try await PostgresTestCluster.shared().psql(
                "SELECT min(c.version) FROM jetstream.changes c JOIN jetstream.scopes s ON s.id = c.scope_id WHERE s.name = 'a'",
                database: database)
            #expect(left == "29")
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 29)
        }
    }

    @Test func aVersion3DatabaseIsMigratedAndItsScopesPruneFromTheStart() async throws {
        try await withStoreLocation(.postgres, settings: Self.keepFive) { location in
            let database = try #require(location.database)
            do {
                let store = try location.openPostgres()
                defer { store.close() }
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                try await appendVersions(store, "a", 1...12)
            }
            // Back to version 3's layout: no mark, and version 3 recorded last.
            try await PostgresTestCluster.shared().psql(
                """
                ALTER TABLE jetstream.scopes DROP COLUMN pruned;
                DELETE FROM jetstream.schema_version WHERE version = 4;
                """, database: database)
            let store = try location.openPostgres()
            defer { store.close() }
            let recorded = try await PostgresTestCluster.shared().psql(
                "SELECT max(version) FROM jetstream.schema_version", database: database)
            #expect(recorded == "4")
            #expect(try await pruned("a", in: database) == "0")
            try await store.writeSnapshot(scope: "a", version: 6, snapshot: Array("at 6".utf8))
            #expect(try await pruned("a", in: database) == "6")
            #expect(try await store.changes(scope: "a", after: 6, limit: 100).records.map(\.version) == Array(7...12))
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 7)
        }
    }
}
