import Store
import Testing

@Suite struct TombstoneTests {
    @Test(arguments: StoreKind.allCases)
    func aDeletedScopeIsGoneButItsVersionsAreNotReused(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: Array("first".utf8))
            try await appendVersions(store, "a", 1...3)
            #expect(try await store.deleteScope(named: "a") == 3)

            #expect(try await store.scope(named: "a") == nil)
            #expect(try await store.listScopes(after: nil, limit: 10).isEmpty)
            await #expect(throws: StoreError.scopeMissing("a")) {
                try await store.append(AppendRequest(scope: "a", version: 4, payload: []))
            }
            await #expect(throws: StoreError.scopeMissing("a")) { try await store.deleteScope(named: "a") }

            let restart = try await store.createScope(descriptor("a"), snapshot: Array("second".utf8))
            #expect(restart == 4)
            let info = try #require(await store.scope(named: "a"))
            #expect(info.version == 4)
            #expect(info.lowestRetainedVersion == nil)
            #expect(info.oldestResumableVersion == 4)
            #expect(!info.canResume(from: 3))
            #expect(info.canResume(from: 4))
            // An id from the earlier incarnation is too old: the client needs a reset.
            await #expect(throws: StoreError.historyTruncated(scope: "a", after: 3, oldestResumable: 4)) {
                try await store.changes(scope: "a", after: 3, limit: 10)
            }
            #expect(try await store.changes(scope: "a", after: 4, limit: 10).records.isEmpty)
            await #expect(throws: StoreError.versionConflict(scope: "a", expected: 5, attempted: 1)) {
                try await store.append(AppendRequest(scope: "a", version: 1, payload: []))
            }
            try await appendVersions(store, "a", 5...6)
            var recovered: [RecoveredScope] = []
            try await store.recover { recovered.append($0) }
            #expect(recovered.count == 1)
            #expect(recovered.first?.snapshotVersion == 4)
            #expect(recovered.first?.snapshot == Array("second".utf8))
            #expect(recovered.first?.tail.map(\.version) == [5, 6])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theTombstoneSurvivesAReopen(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try location.open()
                defer { store.close() }
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                try await appendVersions(store, "a", 1...7)
                _ = try await store.deleteScope(named: "a")
            }
            let store = try location.open()
            defer { store.close() }
            var recovered = 0
            try await store.recover { _ in recovered += 1 }
            #expect(recovered == 0)
            #expect(try await store.createScope(descriptor("a"), snapshot: []) == 8)
        }
    }
}
