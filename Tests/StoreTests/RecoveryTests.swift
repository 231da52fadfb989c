import Store
import Testing

/// Reopening a store (a restart of the gateway) finds every scope as it was. What is particular to
/// the SQLite file — damage, a second opener, open errors — is in `SQLiteFileTests`.
@Suite struct RecoveryTests {
    @Test(arguments: StoreKind.allCases)
    func reopeningRecoversEveryScopeFromItsSnapshotAndLogTail(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try location.open()
                defer { store.close() }
                for name in ["c", "a", "b"] {
                    _ = try await store.createScope(descriptor(name), snapshot: Array(name.utf8))
                }
                try await appendVersions(store, "a", 1...5)
                try await store.writeSnapshot(scope: "a", version: 3, snapshot: Array("a at 3".utf8))
                try await appendVersions(store, "b", 1...2)
            }
            let store = try location.open()
            defer { store.close() }
            var recovered: [RecoveredScope] = []
            try await store.recover { recovered.append($0) }
            #expect(recovered.map(\.info.name) == ["a", "b", "c"])
            #expect(recovered.map(\.info.version) == [5, 2, 0])
            #expect(recovered.map(\.snapshotVersion) == [3, 0, 0])
            #expect(recovered.map(\.snapshot) == [Array("a at 3".utf8), Array("b".utf8), Array("c".utf8)])
            try #require(recovered.count == 3)
            #expect(recovered[0].tail == [4, 5].map { ChangeRecord(version: $0, payload: payload("a", $0)) })
            #expect(recovered[1].tail.map(\.version) == [1, 2])
            #expect(recovered[2].tail.isEmpty)
            #expect(recovered[0].info.descriptor == descriptor("a"))
            // Writing continues where the log ended.
            await #expect(throws: StoreError.versionConflict(scope: "a", expected: 6, attempted: 5)) {
                try await store.append(AppendRequest(scope: "a", version: 5, payload: []))
            }
            try await appendVersions(store, "a", 6...6)
            let one = try #require(await store.recoverScope(named: "a"))
            #expect(one.snapshotVersion == 3)
            #expect(one.tail.map(\.version) == [4, 5, 6])
            #expect(try await store.recoverScope(named: "zz") == nil)
        }
    }

    /// `close()` drains queued writes: appends submitted just before it are answered, and durable
    /// (SQLite's even with its commit thread held when close begins).
    @Test(arguments: StoreKind.allCases)
    func closingCommitsWhatIsQueued(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let results = ResultCollector()
            do {
                let store = try location.open()
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                (store as? SQLiteStore)?.pauseCommits()
                for version: Int64 in 1...3 {
                    store.append(AppendRequest(scope: "a", version: version, payload: payload("a", version))) {
                        results.add("\(version)", $0)
                    }
                }
                store.close()
                #expect(results.count == 3)
                #expect(results.failures.isEmpty)
                await #expect(throws: StoreError.closed) {
                    try await store.append(AppendRequest(scope: "a", version: 4, payload: []))
                }
            }
            let store = try location.open()
            defer { store.close() }
            #expect(try await store.changes(scope: "a", after: 0, limit: 10).records.map(\.version) == [1, 2, 3])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func recoveryWalksManyScopesPageByPage(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let names = (0..<40).map { "scope-" + String("00\($0)".suffix(3)) }
            for name in names { _ = try await store.createScope(descriptor(name), snapshot: []) }
            var seen: [String] = []
            try await store.recover { seen.append($0.info.name) }
            #expect(seen == names)
        }
    }
}
