import Store
import Testing

@Suite struct StoreRoundTripTests {
    @Test func createAppendAndReadBack() async throws {
        try await withStore { store, _ in
            let start = try await store.createScope(descriptor("canvas-1"), snapshot: Array("state".utf8))
            #expect(start == 0)
            try await appendVersions(store, "canvas-1", 1...3)
            let info = try #require(try store.scope(named: "canvas-1"))
            #expect(info.descriptor == descriptor("canvas-1"))
            #expect(info.version == 3)
            #expect(info.lowestRetainedVersion == 1)
            #expect(info.oldestResumableVersion == 0)
            let page = try store.changes(scope: "canvas-1", after: 0, limit: 100)
            #expect(page.currentVersion == 3)
            #expect(page.records == (1...3).map { ChangeRecord(version: $0, payload: payload("canvas-1", $0)) })
            #expect(try store.scope(named: "nope") == nil)
        }
    }

    @Test func appendWithTheWrongVersionFailsAndWritesNothing() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...2)
            for wrong: Int64 in [2, 4, 1] {
                await #expect(throws: StoreError.versionConflict(scope: "a", expected: 3, attempted: wrong)) {
                    try await store.append(AppendRequest(scope: "a", version: wrong, payload: [9]))
                }
            }
            let page = try store.changes(scope: "a", after: 0, limit: 10)
            #expect(page.records.map(\.version) == [1, 2])
            #expect(page.records[1].payload == payload("a", 2))
        }
    }

    @Test func missingAndExistingScopesAreErrors() async throws {
        try await withStore { store, _ in
            await #expect(throws: StoreError.scopeMissing("ghost")) {
                try await store.append(AppendRequest(scope: "ghost", version: 1, payload: []))
            }
            #expect(throws: StoreError.scopeMissing("ghost")) { try store.changes(scope: "ghost", after: 0, limit: 1) }
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            await #expect(throws: StoreError.scopeExists("a")) {
                try await store.createScope(descriptor("a"), snapshot: [])
            }
            await #expect(throws: StoreError.invalidArgument("a scope name must not be empty")) {
                try await store.createScope(descriptor(""), snapshot: [])
            }
            #expect(throws: StoreError.invalidArgument("limit must be ≥ 0, got -1")) {
                try store.listScopes(after: nil, limit: -1)
            }
        }
    }

    @Test func scopesAreListedInNameOrderPageByPage() async throws {
        try await withStore { store, _ in
            for name in ["delta", "alpha", "echo", "charlie", "bravo", "zulu"] {
                _ = try await store.createScope(descriptor(name), snapshot: [])
            }
            _ = try await store.deleteScope(named: "zulu")
            var names: [[String]] = []
            var after: String?
            while true {
                let page = try store.listScopes(after: after, limit: 2)
                if page.isEmpty { break }
                names.append(page.map(\.name))
                after = page.last?.name
            }
            #expect(names == [["alpha", "bravo"], ["charlie", "delta"], ["echo"]])
            #expect(try store.listScopes(after: "b", limit: 1).map(\.name) == ["bravo"])
        }
    }

    @Test func historyIsPagedAndAResumePointAheadGetsNothing() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...10)
            #expect(try store.changes(scope: "a", after: 0, limit: 4).records.map(\.version) == [1, 2, 3, 4])
            #expect(try store.changes(scope: "a", after: 4, limit: 4).records.map(\.version) == [5, 6, 7, 8])
            #expect(try store.changes(scope: "a", after: 8, limit: 4).records.map(\.version) == [9, 10])
            let ahead = try store.changes(scope: "a", after: 11, limit: 4)
            #expect(ahead.records.isEmpty)
            #expect(ahead.currentVersion == 10)
        }
    }

    @Test func snapshotsMustStayWithinTheLog() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...4)
            try await store.writeSnapshot(scope: "a", version: 3, snapshot: Array("at 3".utf8))
            await #expect(
                throws: StoreError.invalidArgument("snapshot version 5 of scope 'a' is ahead of its version 4")
            ) {
                try await store.writeSnapshot(scope: "a", version: 5, snapshot: [])
            }
            await #expect(
                throws: StoreError.invalidArgument("snapshot version 2 of scope 'a' is older than its latest 3")
            ) {
                try await store.writeSnapshot(scope: "a", version: 2, snapshot: [])
            }
        }
    }

    @Test func aFailingOperationLeavesTheRestOfItsBatchIntact() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            _ = try await store.createScope(descriptor("b"), snapshot: [])
            let before = store.statistics
            store.pauseCommits()
            let results = ResultCollector()
            store.append(AppendRequest(scope: "a", version: 1, payload: [1])) { results.add("a1", $0) }
            store.append(AppendRequest(scope: "a", version: 5, payload: [5])) { results.add("a5", $0) }
            store.append(AppendRequest(scope: "b", version: 1, payload: [1])) { results.add("b1", $0) }
            store.append(AppendRequest(scope: "a", version: 2, payload: [2])) { results.add("a2", $0) }
            store.resumeCommits()
            #expect(waitUntil { results.count == 4 })
            #expect(results.succeeded("a1"))
            #expect(results.failure("a5") == .versionConflict(scope: "a", expected: 2, attempted: 5))
            #expect(results.succeeded("b1"))
            #expect(results.succeeded("a2"))
            #expect(store.statistics.committedTransactions == before.committedTransactions + 1)
            #expect(try store.changes(scope: "a", after: 0, limit: 10).records.map(\.payload) == [[1], [2]])
            #expect(try store.scope(named: "b")?.version == 1)
        }
    }

    @Test func aClosedStoreRefusesWork() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            store.close()
            await #expect(throws: StoreError.closed) {
                try await store.append(AppendRequest(scope: "a", version: 1, payload: []))
            }
            #expect(throws: StoreError.closed) { try store.scope(named: "a") }
        }
    }

    @Test func theProtocolServesTheGatewayThroughAnExistential() async throws {
        try await withStore { sqlite, _ in
            let store: any ChangeLogStore = sqlite
            let start = try await store.createScope(descriptor("p"), snapshot: Array("s".utf8))
            try await store.append(AppendRequest(scope: "p", version: start + 1, payload: [7]))
            #expect(try await store.changes(scope: "p", after: start, limit: 5).records.map(\.payload) == [[7]])
            #expect(try await store.scope(named: "p")?.version == 1)
            var names: [String] = []
            try await store.recover { names.append($0.info.name) }
            #expect(names == ["p"])
        }
    }
}
