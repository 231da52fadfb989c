import Store
import Testing

/// Retention prunes the log up to its base — the newest snapshot at least N versions old — and the
/// snapshots before that base: the last N change sets stay, everything after the latest snapshot
/// stays (recovery replays it), and every version still readable has a snapshot at or before it
/// (reads of the past, `scope(named:at:)`).
@Suite struct RetentionTests {
    static var keepFive: StoreSettings {
        var settings = StoreSettings()
        settings.retainedChangeSets = 5
        return settings
    }

    @Test(arguments: StoreKind.allCases)
    func retentionPrunesUpToTheNewestSnapshotAtLeastNVersionsOld(kind: StoreKind) async throws {
        try await withStore(kind, settings: Self.keepFive) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: Array("at 0".utf8))
            try await appendVersions(store, "a", 1...20)
            // Only the creation snapshot (version 0) exists: recovery needs the whole log.
            #expect(try await store.applyRetention() == 0)
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 1)

            try await store.writeSnapshot(scope: "a", version: 10, snapshot: Array("at 10".utf8))
            try await store.writeSnapshot(scope: "a", version: 18, snapshot: Array("at 18".utf8))
            // Writing a snapshot already prunes (SQLite: its batch; PostgreSQL: the same
            // transaction), to the newest snapshot at or before 20 − 5: version 10.
            _ = try await store.applyRetention()
            #expect(try await store.applyRetention() == 0)
            let info = try #require(await store.scope(named: "a"))
            #expect(info.lowestRetainedVersion == 11)
            #expect(info.oldestResumableVersion == 10)
            await #expect(throws: StoreError.historyTruncated(scope: "a", after: 9, oldestResumable: 10)) {
                try await store.changes(scope: "a", after: 9, limit: 100)
            }
            #expect(try await store.changes(scope: "a", after: 10, limit: 100).records.map(\.version) == Array(11...20))
        }
    }

    @Test(
        "a past version reads the nearest snapshot at or before it and the log after it, no further",
        arguments: StoreKind.allCases)
    func pastVersionsReadTheNearestSnapshot(kind: StoreKind) async throws {
        try await withStore(kind, settings: Self.keepFive) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: Array("at 0".utf8))
            try await appendVersions(store, "a", 1...20)
            try await store.writeSnapshot(scope: "a", version: 10, snapshot: Array("at 10".utf8))
            try await store.writeSnapshot(scope: "a", version: 18, snapshot: Array("at 18".utf8))
            let atBase = try #require(await store.scope(named: "a", at: 10))
            #expect(atBase.snapshotVersion == 10)
            #expect(atBase.snapshot == Array("at 10".utf8))
            #expect(atBase.tail.isEmpty)
            let between = try #require(await store.scope(named: "a", at: 15))
            #expect(between.snapshotVersion == 10)
            #expect(between.tail.map(\.version) == [11, 12, 13, 14, 15])
            #expect(between.tail.last?.payload == payload("a", 15))
            let recent = try #require(await store.scope(named: "a", at: 19))
            #expect(recent.snapshotVersion == 18)
            #expect(recent.tail.map(\.version) == [19])
            // Ahead of the scope: its current state (the caller compares with info.version).
            let ahead = try #require(await store.scope(named: "a", at: 99))
            #expect(ahead.info.version == 20)
            #expect(ahead.tail.map(\.version) == [19, 20])
            // Before the base: neither a snapshot nor the log reach it.
            await #expect(throws: StoreError.historyTruncated(scope: "a", after: 9, oldestResumable: 10)) {
                try await store.scope(named: "a", at: 9)
            }
            #expect(try await store.scope(named: "missing", at: 1) == nil)
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
                try await store.writeSnapshot(scope: name, version: 6, snapshot: [])
                try await store.writeSnapshot(scope: name, version: 12, snapshot: [])
            }
            let before = try await store.listScopes(after: nil, limit: 10).compactMap(\.lowestRetainedVersion)
            let pruned = try await store.applyRetention()
            // The base is the snapshot at 6 (the newest at or before 12 − 5): 6 records each.
            #expect(before.reduce(0) { $0 + ($1 - 1) } + Int64(pruned) == 12)
            #expect(try await store.listScopes(after: nil, limit: 10).map(\.lowestRetainedVersion) == [7, 7])
        }
    }

    /// Without an explicit pass the log is pruned too, never past what recovery replays; when is
    /// the stores' own business (docs/store.md: SQLite's "Retention", PostgreSQL's "Maintenance").
    @Test(arguments: StoreKind.allCases)
    func retentionRunsWithoutAnExplicitPassAndKeepsWhatRecoveryNeeds(kind: StoreKind) async throws {
        try await withStore(kind, settings: Self.keepFive) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            _ = try await store.createScope(descriptor("b"), snapshot: [])
            try await appendVersions(store, "a", 1...20)
            try await store.writeSnapshot(scope: "a", version: 20, snapshot: Array("at 20".utf8))
            try await appendVersions(store, "a", 21...28)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            try await appendVersions(store, "a", 29...30)
            try await appendVersions(store, "b", 1...30)
            // Both stores prune as the snapshot at 28 is written, to the newest snapshot at or
            // before 28 − 5 = 23: version 20.
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 21)
            // b never had a snapshot past its creation, so its whole log stays.
            #expect(try await store.scope(named: "b")?.lowestRetainedVersion == 1)
            var recovered: [String: RecoveredScope] = [:]
            try await store.recover { recovered[$0.info.name] = $0 }
            #expect(recovered["a"]?.snapshotVersion == 28)
            #expect(recovered["a"]?.snapshot == Array("at 28".utf8))
            #expect(recovered["a"]?.tail.map(\.version) == [29, 30])
            #expect(recovered["b"]?.tail.count == 30)
            // An explicit pass finds the same base (the newest snapshot at or before 25 is 20).
            _ = try await store.applyRetention()
            #expect(try await store.scope(named: "a")?.lowestRetainedVersion == 21)
            #expect(try await store.scope(named: "b")?.lowestRetainedVersion == 1)
            #expect(try await store.scope(named: "a", at: 22)?.snapshotVersion == 20)
        }
    }
}
