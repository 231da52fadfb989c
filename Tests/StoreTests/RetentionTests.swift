import Store
import Testing

@Suite struct RetentionTests {
    static var keepFive: SQLiteStore.Configuration {
        var configuration = SQLiteStore.Configuration()
        configuration.retainedChangeSets = 5
        return configuration
    }

    @Test func retentionKeepsTheLastNAndEverythingAfterTheLatestSnapshot() async throws {
        try await withStore(configuration: Self.keepFive) { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...20)
            // Only the creation snapshot (version 0) exists: recovery needs the whole log.
            #expect(try await store.applyRetention() == 0)
            #expect(try store.scope(named: "a")?.lowestRetainedVersion == 1)

            try await store.writeSnapshot(scope: "a", version: 18, snapshot: Array("at 18".utf8))
            // The snapshot's batch already pruned in the background; an explicit pass finds nothing left.
            _ = try await store.applyRetention()
            #expect(try await store.applyRetention() == 0)
            let info = try #require(try store.scope(named: "a"))
            #expect(info.lowestRetainedVersion == 16)
            #expect(info.oldestResumableVersion == 15)
            #expect(throws: StoreError.historyTruncated(scope: "a", after: 14, oldestResumable: 15)) {
                try store.changes(scope: "a", after: 14, limit: 100)
            }
            #expect(
                try store.changes(scope: "a", after: 15, limit: 100).records.map(\.version) == [16, 17, 18, 19, 20])
        }
    }

    @Test func anExplicitPassPrunesEveryScope() async throws {
        var configuration = Self.keepFive
        configuration.retentionChunk = 1
        try await withStore(configuration: configuration) { store, _ in
            for name in ["a", "b"] {
                _ = try await store.createScope(descriptor(name), snapshot: [])
                try await appendVersions(store, name, 1...12)
            }
            // One background deletion per batch at most: the snapshots' batches leave most of the work.
            try await store.writeSnapshot(scope: "a", version: 12, snapshot: [])
            try await store.writeSnapshot(scope: "b", version: 12, snapshot: [])
            let before = try store.listScopes(after: nil, limit: 10).compactMap(\.lowestRetainedVersion)
            let pruned = try await store.applyRetention()
            #expect(before.reduce(0) { $0 + ($1 - 1) } + Int64(pruned) == 14)
            #expect(try store.listScopes(after: nil, limit: 10).map(\.lowestRetainedVersion) == [8, 8])
        }
    }

    @Test func retentionRunsInTheBackgroundAsAppendsCommit() async throws {
        try await withStore(configuration: Self.keepFive) { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            _ = try await store.createScope(descriptor("b"), snapshot: [])
            try await appendVersions(store, "a", 1...28)
            try await store.writeSnapshot(scope: "a", version: 28, snapshot: Array("at 28".utf8))
            try await appendVersions(store, "a", 29...30)
            try await appendVersions(store, "b", 1...30)
            #expect(try store.scope(named: "a")?.lowestRetainedVersion == 26)
            // b never had a snapshot past its creation, so its whole log stays.
            #expect(try store.scope(named: "b")?.lowestRetainedVersion == 1)
            var recovered: [String: RecoveredScope] = [:]
            try store.recover { recovered[$0.info.name] = $0 }
            #expect(recovered["a"]?.snapshotVersion == 28)
            #expect(recovered["a"]?.snapshot == Array("at 28".utf8))
            #expect(recovered["a"]?.tail.map(\.version) == [29, 30])
            #expect(recovered["b"]?.tail.count == 30)
        }
    }
}
