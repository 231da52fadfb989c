import Store
import Testing

@Suite struct RetentionTests {
    static var keepFive: StoreSettings {
        var settings = StoreSettings()
        settings.retainedChangeSets = 5
        return settings
    }

    @Test(arguments: StoreKind.allCases)
    func retentionKeepsTheLastNAndEverythingAfterTheLatestSnapshot(kind: StoreKind) async throws {
        try await withStore(kind, settings: Self.keepFive) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...20)
            // Only the creation snapshot (version 0) exists: recovery needs the whole log.
            #expect(try await store.applyRetention() == 0)
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 1)

            try await store.writeSnapshot(scope: "a", version: 18, snapshot: Array("at 18".utf8))
            // Writing the snapshot already pruned (SQLite: its batch; PostgreSQL: the same
            // transaction); an explicit pass finds nothing left.
            _ = try await store.applyRetention()
            #expect(try await store.applyRetention() == 0)
            let info = try #require(await store.scope(named: "a"))
            #expect(info.lowestRetainedVersion == 16)
            #expect(info.oldestResumableVersion == 15)
            await #expect(throws: StoreError.historyTruncated(scope: "a", after: 14, oldestResumable: 15)) {
                try await store.changes(scope: "a", after: 14, limit: 100)
            }
            #expect(
                try await store.changes(scope: "a", after: 15, limit: 100).records.map(\.version) == [
                    16, 17, 18, 19, 20,
                ])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anExplicitPassPrunesEveryScope(kind: StoreKind) async throws {
        var settings = Self.keepFive
        // SQLite: one background deletion per batch at most, so the snapshots' batches leave most of
        // the work to the explicit pass. (PostgreSQL prunes in full as it writes a snapshot.)
        settings.sqlite.retentionChunk = 1
        try await withStore(kind, settings: settings) { store in
            for name in ["a", "b"] {
                _ = try await store.createScope(descriptor(name), snapshot: [])
                try await appendVersions(store, name, 1...12)
            }
            try await store.writeSnapshot(scope: "a", version: 12, snapshot: [])
            try await store.writeSnapshot(scope: "b", version: 12, snapshot: [])
            let before = try await store.listScopes(after: nil, limit: 10).compactMap(\.lowestRetainedVersion)
            let pruned = try await store.applyRetention()
            #expect(before.reduce(0) { $0 + ($1 - 1) } + Int64(pruned) == 14)
            #expect(try await store.listScopes(after: nil, limit: 10).map(\.lowestRetainedVersion) == [8, 8])
        }
    }

    /// Without an explicit pass the log is pruned too, never past what recovery replays; when is
    /// the stores' own business (docs/store.md: SQLite's "Retention", PostgreSQL's "Maintenance").
    @Test(arguments: StoreKind.allCases)
    func retentionRunsWithoutAnExplicitPassAndKeepsWhatRecoveryNeeds(kind: StoreKind) async throws {
        try await withStore(kind, settings: Self.keepFive) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            _ = try await store.createScope(descriptor("b"), snapshot: [])
            try await appendVersions(store, "a", 1...28)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            try await appendVersions(store, "a", 29...30)
            try await appendVersions(store, "b", 1...30)
            let lowest = try await store.scope(named: "a")?.lowestRetainedVersion
            switch kind {
            case .sqlite:
                // The commit thread prunes as appends commit (a scope is due every min(N/8, 256)
                // appends) and when a snapshot is written: to the bound min(30 − 5, 28) = 25.
                #expect(lowest == 26)
            case .postgres:
                // write_snapshot prunes in its own transaction, to min(28 − 5, 28) = 23 at the
                // time; appends never prune, so 24 and 25 wait for the next snapshot or pass.
                #expect(lowest == 24)
            }
            // b never had a snapshot past its creation, so its whole log stays.
            #expect(try await store.scope(named: "b")?.lowestRetainedVersion == 1)
            var recovered: [String: RecoveredScope] = [:]
            try await store.recover { recovered[$0.info.name] = $0 }
            #expect(recovered["a"]?.snapshotVersion == 28)
            #expect(recovered["a"]?.snapshot == Array("at 28".utf8))
            #expect(recovered["a"]?.tail.map(\.version) == [29, 30])
            #expect(recovered["b"]?.tail.count == 30)
            // An explicit pass brings both to the bound, and no further.
            _ = try await store.applyRetention()
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 26)
            #expect(try await store.scope(named: "b")?.lowestRetainedVersion == 1)
        }
    }
}
