import Store
import Testing

/// SQLite's commit thread: operations queued while it is held (``SQLiteStore/pauseCommits()``) run
/// as one batch, one transaction with a savepoint each, so what one of them does wrong must stay its
/// own. The same rules seen from outside, for every store, are in the contract suites.
@Suite struct SQLiteCommitThreadTests {
    @Test func aFailingOperationLeavesTheRestOfItsBatchIntact() async throws {
        try await withSQLiteStore { store, _ in
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

    @Test func aFailedAppendDoesNotBecomeTheHeadWithinOneBatch() async throws {
        try await withSQLiteStore { store, path in
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            try await store.append(
                AppendRequest(scope: "s", version: 1, payload: payload("s", 1), parentToken: 0, token: 1))
            try executeRawSQL(
                """
                CREATE TRIGGER refuse_two BEFORE INSERT ON changes WHEN instr(CAST(NEW.payload AS TEXT), '"version":2}') > 0
                BEGIN SELECT RAISE(ABORT, 'injected'); END
                """, path: path)
            let results = ResultCollector()
            store.pauseCommits()
            // 2 (fails), 3 built on it (refused by number), then 2' built on 1 and 3' built on 2' in one batch.
            let requests: [(String, Int64, UInt64, UInt64)] = [
                ("a", 2, 1, 2), ("b", 3, 2, 3), ("x", 2, 1, 20), ("y", 3, 20, 30), ("z", 4, 3, 40),
            ]
            for (label, version, parent, token) in requests {
                var request = AppendRequest(
                    scope: "s", version: version, payload: payload("s", version), parentToken: parent, token: token)
                if label == "x" || label == "y" { request.payload = Array("{\"label\":\"\(label)\"}".utf8) }
                store.append(request) { results.add(label, $0) }
            }
            store.resumeCommits()
            #expect(waitUntil { results.count == requests.count })
            #expect(!results.succeeded("a"))
            #expect(results.failure("b") == .versionConflict(scope: "s", expected: 2, attempted: 3))
            #expect(results.succeeded("x"))
            #expect(results.succeeded("y"))
            // z is numbered 4 and follows y's version 3 by number, but it was built on b.
            #expect(results.failure("z") == .staleBase(scope: "s", version: 4))
            let logged = try store.changes(scope: "s", after: 0, limit: 10).records
            #expect(logged.map(\.version) == [1, 2, 3])
            #expect(
                logged.dropFirst().map { String(decoding: $0.payload, as: UTF8.self) } == [
                    #"{"label":"x"}"#, #"{"label":"y"}"#,
                ])
        }
    }

    @Test func expiryAlsoRunsInTheBackgroundAsBatchesCommit() async throws {
        let clock = ManualClock()
        var configuration = IdempotencyTests.settings(clock: clock).sqlite
        configuration.idempotencyExpiryIntervalMilliseconds = 500
        try await withSQLiteStore(configuration: configuration) { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await store.recordRejection(
                scope: "a", IdempotencyTests.record("k", status: 422, response: ""))
            clock.advance(byMilliseconds: 1500)
            try await appendVersions(store, "a", 1...1)
            // The append's batch expired the old key already: nothing is left for an explicit pass.
            #expect(try await store.expireIdempotencyRecords() == 0)
        }
    }
}
