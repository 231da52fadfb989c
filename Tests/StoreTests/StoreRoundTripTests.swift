import Store
import Testing

/// The basic contract of every ``ChangeLogStore``: create, append, read back, the errors.
@Suite struct StoreRoundTripTests {
    @Test(arguments: StoreKind.allCases)
    func createAppendAndReadBack(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let start = try await store.createScope(descriptor("canvas-1"), snapshot: Array("state".utf8))
            #expect(start == 0)
            try await appendVersions(store, "canvas-1", 1...3)
            let info = try #require(await store.scope(named: "canvas-1"))
            #expect(info.descriptor == descriptor("canvas-1"))
            #expect(info.version == 3)
            #expect(info.lowestRetainedVersion == 1)
            #expect(info.oldestResumableVersion == 0)
            let page = try await store.changes(scope: "canvas-1", after: 0, limit: 100)
            #expect(page.currentVersion == 3)
            #expect(page.records == (1...3).map { ChangeRecord(version: $0, payload: payload("canvas-1", $0)) })
            #expect(try await store.scope(named: "nope") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func appendWithTheWrongVersionFailsAndWritesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...2)
            for wrong: Int64 in [2, 4, 1] {
                await #expect(throws: StoreError.versionConflict(scope: "a", expected: 3, attempted: wrong)) {
                    try await store.append(AppendRequest(scope: "a", version: wrong, payload: [9]))
                }
            }
            let page = try await store.changes(scope: "a", after: 0, limit: 10)
            #expect(page.records.map(\.version) == [1, 2])
            #expect(page.records[1].payload == payload("a", 2))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func missingAndExistingScopesAreErrors(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            await #expect(throws: StoreError.scopeMissing("ghost")) {
                try await store.append(AppendRequest(scope: "ghost", version: 1, payload: []))
            }
            await #expect(throws: StoreError.scopeMissing("ghost")) {
                try await store.changes(scope: "ghost", after: 0, limit: 1)
            }
            await #expect(throws: StoreError.scopeMissing("ghost")) {
                try await store.recordRejection(
                    scope: "ghost",
                    IdempotencyRecord(key: "k", requestDigest: [1], status: 422, response: []))
            }
            await #expect(throws: StoreError.scopeMissing("ghost")) {
                try await store.writeSnapshot(scope: "ghost", version: 0, snapshot: [])
            }
            await #expect(throws: StoreError.scopeMissing("ghost")) { try await store.deleteScope(named: "ghost") }
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            await #expect(throws: StoreError.scopeExists("a")) {
                try await store.createScope(descriptor("a"), snapshot: [])
            }
            await #expect(throws: StoreError.invalidArgument("a scope name must not be empty")) {
                try await store.createScope(descriptor(""), snapshot: [])
            }
            await #expect(throws: StoreError.invalidArgument("limit must be ≥ 0, got -1")) {
                try await store.listScopes(after: nil, limit: -1)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func scopesAreListedInNameOrderPageByPage(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for name in ["delta", "alpha", "echo", "charlie", "bravo", "zulu"] {
                _ = try await store.createScope(descriptor(name), snapshot: [])
            }
            _ = try await store.deleteScope(named: "zulu")
            var names: [[String]] = []
            var after: String?
            while true {
                let page = try await store.listScopes(after: after, limit: 2)
                if page.isEmpty { break }
                names.append(page.map(\.name))
                after = page.last?.name
            }
            #expect(names == [["alpha", "bravo"], ["charlie", "delta"], ["echo"]])
            #expect(try await store.listScopes(after: "b", limit: 1).map(\.name) == ["bravo"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func historyIsPagedAndAResumePointAheadGetsNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...10)
            #expect(try await store.changes(scope: "a", after: 0, limit: 4).records.map(\.version) == [1, 2, 3, 4])
            #expect(try await store.changes(scope: "a", after: 4, limit: 4).records.map(\.version) == [5, 6, 7, 8])
            #expect(try await store.changes(scope: "a", after: 8, limit: 4).records.map(\.version) == [9, 10])
            let ahead = try await store.changes(scope: "a", after: 11, limit: 4)
            #expect(ahead.records.isEmpty)
            #expect(ahead.currentVersion == 10)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func snapshotsMustStayWithinTheLog(kind: StoreKind) async throws {
        try await withStore(kind) { store in
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

    /// Appends submitted without waiting (as the engine pipelines) are applied in submission order;
    /// one that fails leaves those after it intact. (SQLite's version of this, all in one commit
    /// batch, is in `SQLiteCommitThreadTests`.)
    @Test(arguments: StoreKind.allCases)
    func aFailingAppendAmongQueuedOnesLeavesTheOthersIntact(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            _ = try await store.createScope(descriptor("b"), snapshot: [])
            let results = ResultCollector()
            store.append(AppendRequest(scope: "a", version: 1, payload: [1])) { results.add("a1", $0) }
            store.append(AppendRequest(scope: "a", version: 5, payload: [5])) { results.add("a5", $0) }
            store.append(AppendRequest(scope: "b", version: 1, payload: [1])) { results.add("b1", $0) }
            store.append(AppendRequest(scope: "a", version: 2, payload: [2])) { results.add("a2", $0) }
            #expect(await eventually { results.count == 4 })
            #expect(results.succeeded("a1"))
            #expect(results.failure("a5") == .versionConflict(scope: "a", expected: 2, attempted: 5))
            #expect(results.succeeded("b1"))
            #expect(results.succeeded("a2"))
            #expect(try await store.changes(scope: "a", after: 0, limit: 10).records.map(\.payload) == [[1], [2]])
            #expect(try await store.scope(named: "b")?.version == 1)
        }
    }

    /// Many versions of several scopes submitted back to back without waiting for any: every one is
    /// logged, in order, although the scopes' appends interleave.
    @Test(arguments: StoreKind.allCases)
    func pipelinedAppendsLandInSubmissionOrder(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let scopes = ["p", "q", "r", "s", "t"]
            for name in scopes { _ = try await store.createScope(descriptor(name), snapshot: []) }
            let results = ResultCollector()
            let versions: Int64 = 60
            for version in 1...versions {
                for name in scopes {
                    store.append(AppendRequest(scope: name, version: version, payload: payload(name, version))) {
                        results.add("\(name)\(version)", $0)
                    }
                }
            }
            #expect(await eventually { results.count == scopes.count * Int(versions) })
            #expect(results.failures.isEmpty)
            for name in scopes {
                let page = try await store.changes(scope: name, after: 0, limit: 1000)
                #expect(page.currentVersion == versions)
                #expect(page.records == (1...versions).map { ChangeRecord(version: $0, payload: payload(name, $0)) })
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aClosedStoreRefusesWork(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            store.close()
            await #expect(throws: StoreError.closed) {
                try await store.append(AppendRequest(scope: "a", version: 1, payload: []))
            }
            await #expect(throws: StoreError.closed) { try await store.scope(named: "a") }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theProtocolServesTheGatewayThroughAnExistential(kind: StoreKind) async throws {
        try await withStore(kind) { store in
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
