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

    /// A store keeping 5 change sets on a fresh database, with scope `a` created (a snapshot at 0).
    private func withScopeA(_ body: (PostgresStore, String) async throws -> Void) async throws {
        try await withStoreLocation(.postgres, settings: Self.keepFive) { location in
            let store = try location.openPostgres()
            defer { store.close() }
            _ = try await store.createScope(descriptor("a"), snapshot: Array("at 0".utf8))
            try await body(store, try #require(location.database))
        }
    }

    private func sql(_ text: String, in database: String) async throws -> String {
        try await PostgresTestCluster.shared().psql(text, database: database)
    }

    private func pruned(in database: String) async throws -> String {
        try await sql("SELECT pruned FROM jetstream.scopes WHERE name = 'a'", in: database)
    }

    private func lowestLogged(in database: String) async throws -> String {
        try await sql(
            "SELECT min(c.version) FROM jetstream.changes c JOIN jetstream.scopes s ON s.id = c.scope_id "
                + "WHERE s.name = 'a'", in: database)
    }

    /// Log rows at `versions` of scope `a`, written behind the store's back.
    private func plant(_ versions: [Int], in database: String) async throws {
        let values = versions.map { "(\($0))" }.joined(separator: ", ")
        _ = try await sql(
            """
            INSERT INTO jetstream.changes (scope_id, version, payload)
                SELECT id, v, '\\x00'::bytea FROM jetstream.scopes, (VALUES \(values)) AS planted(v) WHERE name = 'a';
            """, in: database)
    }

    @Test func eachPruneMovesTheMarkAndARowFromBeforeTheMarkPrunesItsWholeRange() async throws {
        try await withScopeA { store, database in
            try await appendVersions(store, "a", 1...30)
            #expect(try await pruned(in: database) == "0")
            try await store.writeSnapshot(scope: "a", version: 10, snapshot: Array("at 10".utf8))
            #expect(try await pruned(in: database) == "10")
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 11)
            try await store.writeSnapshot(scope: "a", version: 20, snapshot: Array("at 20".utf8))
            #expect(try await pruned(in: database) == "20")
            #expect(try await store.changes(scope: "a", after: 20, limit: 100).records.map(\.version) == Array(21...30))

            // A row as a database from before version 4 has it: the mark at 0 and log rows far
            // below the latest prune. The next prune deletes all of them.
            _ = try await sql("UPDATE jetstream.scopes SET pruned = 0 WHERE name = 'a'", in: database)
            try await plant([3, 15], in: database)
            try await appendVersions(store, "a", 31...33)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            #expect(try await pruned(in: database) == "28")
            #expect(try await lowestLogged(in: database) == "29")
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 29)
        }
    }

    /// What makes the prune cheap: it never looks at or below the mark. A row planted there (which
    /// no store path leaves) survives the next prune, while the range above the mark goes.
    @Test func aPruneDeletesOnlyAboveTheMark() async throws {
        try await withScopeA { store, database in
            try await appendVersions(store, "a", 1...30)
            try await store.writeSnapshot(scope: "a", version: 20, snapshot: Array("at 20".utf8))
            #expect(try await pruned(in: database) == "20")
            try await plant([7], in: database)
            try await appendVersions(store, "a", 31...33)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            #expect(try await pruned(in: database) == "28")
            #expect(try await lowestLogged(in: database) == "7")
            #expect(try await store.changes(scope: "a", after: 28, limit: 100).records.map(\.version) == Array(29...33))
            // The explicit pass keeps to the mark as well.
            #expect(try await store.applyRetention() == 0)
            #expect(try await lowestLogged(in: database) == "7")
        }
    }

    /// A name deleted and created again continues its versions; its new log prunes as any other.
    @Test func aScopeDeletedAndCreatedAgainPrunesItsNewLog() async throws {
        try await withScopeA { store, database in
            try await appendVersions(store, "a", 1...9)
            _ = try await store.deleteScope(named: "a")
            #expect(try await store.createScope(descriptor("a"), snapshot: Array("again".utf8)) == 10)
            try await appendVersions(store, "a", 11...30)
            try await store.writeSnapshot(scope: "a", version: 20, snapshot: Array("at 20".utf8))
            #expect(try await pruned(in: database) == "20")
            #expect(try await lowestLogged(in: database) == "21")
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 21)
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
            _ = try await sql(
                """
                ALTER TABLE jetstream.scopes DROP COLUMN pruned;
                DELETE FROM jetstream.schema_version WHERE version = 4;
                """, in: database)
            let store = try location.openPostgres()
            defer { store.close() }
            #expect(try await sql("SELECT max(version) FROM jetstream.schema_version", in: database) == "4")
            #expect(try await pruned(in: database) == "0")
            try await store.writeSnapshot(scope: "a", version: 6, snapshot: Array("at 6".utf8))
            #expect(try await pruned(in: database) == "6")
            #expect(try await store.changes(scope: "a", after: 6, limit: 100).records.map(\.version) == Array(7...12))
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 7)
        }
    }
}
