import PostgresStore
import Store
import Synchronization
import TestSupport
import Testing

/// What only the shared store does: several nodes (here two ``PostgresStore``s) on one database —
/// notices of what the other node committed, version races between nodes, deletions seen across
/// nodes — and the PostgreSQL side of failures the contract suites cannot inject portably.
@Suite struct PostgresSharedStoreTests {
    /// Two nodes on one fresh database, both closed after `body`.
    private func withTwoNodes(_ body: (PostgresStore, PostgresStore, StoreLocation) async throws -> Void) async throws {
        try await withStoreLocation(.postgres) { location in
            let first = try location.openPostgres()
            defer { first.close() }
            let second = try location.openPostgres()
            defer { second.close() }
            try await body(first, second, location)
        }
    }

    /// Starts following `store` into `notices` and waits (bounded) until its listener connection
    /// listens, so that nothing committed after this returns can be missed.
    private func follow(_ store: PostgresStore, into notices: NoticeLog) async {
        store.follow { notices.add($0) }
        #expect(await eventually(seconds: 30) { store.statistics.listenerUp }, "the listener never connected")
    }

    /// Appends `version` of `scope` with `payload`; nil when it was logged, else the store's error.
    private func outcome(
        _ store: PostgresStore, _ scope: String, _ version: Int64, _ payload: [UInt8]
    ) async -> StoreError? {
        do throws(StoreError) {
            try await store.append(AppendRequest(scope: scope, version: version, payload: payload))
            return nil
        } catch {
            return error
        }
    }

    @Test func anAppendOnOneNodeIsAnnouncedToTheOtherAndReadFromTheLog() async throws {
        try await withTwoNodes { first, second, _ in
            let notices = NoticeLog()
            await follow(second, into: notices)
            _ = try await first.createScope(descriptor("shared"), snapshot: [])
            try await first.append(AppendRequest(scope: "shared", version: 1, payload: payload("shared", 1)))
            let announced = await eventually(seconds: 20) {
                notices.changed.contains(ScopeVersion(name: "shared", version: 1))
            }
            #expect(announced, "no notice of shared:1 within 20 s; got \(notices.all)")
            // A notice is a hint; the other node reads the versions and the log itself.
            #expect(try await second.scopeVersions().contains(ScopeVersion(name: "shared", version: 1)))
            #expect(try await second.scope(named: "shared")?.version == 1)
            #expect(
                try await second.changes(scope: "shared", after: 0, limit: 10).records == [
                    ChangeRecord(version: 1, payload: payload("shared", 1))
                ])
        }
    }

    @Test func twoNodesAppendingTheSameVersionAtOnceOneWinsTheOtherConflicts() async throws {
        try await withTwoNodes { first, second, _ in
            _ = try await first.createScope(descriptor("race"), snapshot: [])
            var winners: [[UInt8]] = []
            for version: Int64 in 1...10 {
                let fromFirst = Array("first \(version)".utf8)
                let fromSecond = Array("second \(version)".utf8)
                async let firstOutcome = outcome(first, "race", version, fromFirst)
                async let secondOutcome = outcome(second, "race", version, fromSecond)
                let outcomes = await [firstOutcome, secondOutcome]
                #expect(outcomes.filter { $0 == nil }.count == 1, "version \(version): \(outcomes)")
                #expect(
                    outcomes.compactMap { $0 } == [
                        .versionConflict(scope: "race", expected: version + 1, attempted: version)
                    ])
                winners.append(outcomes[0] == nil ? fromFirst : fromSecond)
            }
            // The log holds exactly the winners' change sets, and both nodes read the same.
            for store in [first, second] {
                let page = try await store.changes(scope: "race", after: 0, limit: 100)
                #expect(page.currentVersion == 10)
                #expect(page.records.map(\.payload) == winners)
            }
        }
    }

    @Test func aDeletionThroughOneNodeIsSeenByTheOtherAndTheNameContinuesAfterItsTombstone() async throws {
        try await withTwoNodes { first, second, _ in
            _ = try await first.createScope(descriptor("gone"), snapshot: Array("first".utf8))
            try await appendVersions(first, "gone", 1...3)
            #expect(try await second.scope(named: "gone")?.version == 3)
            let notices = NoticeLog()
            await follow(second, into: notices)

            #expect(try await first.deleteScope(named: "gone") == 3)
            #expect(try await second.scope(named: "gone") == nil)
            #expect(try await second.listScopes(after: nil, limit: 10).isEmpty)
            await #expect(throws: StoreError.scopeMissing("gone")) {
                try await second.append(AppendRequest(scope: "gone", version: 4, payload: []))
            }
            #expect(try await second.scopeVersions() == [ScopeVersion(name: "gone", version: 3, deleted: true)])
            let announced = await eventually(seconds: 20) {
                notices.changed.contains { $0.name == "gone" && $0.deleted }
            }
            #expect(announced, "no deletion notice for gone within 20 s; got \(notices.all)")

            // Re-created through the other node, the name continues after its tombstone on both.
            #expect(try await second.createScope(descriptor("gone"), snapshot: Array("second".utf8)) == 4)
            #expect(try await first.scope(named: "gone")?.version == 4)
            await #expect(throws: StoreError.historyTruncated(scope: "gone", after: 3, oldestResumable: 4)) {
                try await first.changes(scope: "gone", after: 3, limit: 10)
            }
            try await first.append(AppendRequest(scope: "gone", version: 5, payload: payload("gone", 5)))
            let recovered = try #require(await second.recoverScope(named: "gone"))
            #expect(recovered.snapshotVersion == 4)
            #expect(recovered.snapshot == Array("second".utf8))
            #expect(recovered.tail.map(\.version) == [5])
        }
    }

    /// The PostgreSQL counterpart of `SQLiteCommitThreadTests.aFailedAppendDoesNotBecomeTheHeadWithinOneBatch`:
    /// a trigger makes version 2 fail with an SQL error (`.postgres`, SQLSTATE P0001 — never
    /// `.sqlite`), which aborts whatever batch it is in; the writer then runs that batch's appends
    /// one by one, and the failed one must not become the head.
    @Test func aFailedAppendDoesNotBecomeTheHeadWhenItsBatchFails() async throws {
        try await withStoreLocation(.postgres) { location in
            let store = try location.openPostgres()
            defer { store.close() }
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            try await store.append(
                AppendRequest(scope: "s", version: 1, payload: payload("s", 1), parentToken: 0, token: 1))
            try await PostgresTestCluster.shared().psql(
                """
                CREATE FUNCTION refuse_two() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF position('"version":2}' in convert_from(NEW.payload, 'UTF8')) > 0 THEN
                        RAISE EXCEPTION 'injected';
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER refuse_two BEFORE INSERT ON jetstream.changes
                    FOR EACH ROW EXECUTE FUNCTION refuse_two();
                """, database: try #require(location.database))
            let results = ResultCollector()
            // 2 (fails), 3 built on it (refused by number), then 2' built on 1 and 3' built on 2'.
            let requests: [(String, Int64, UInt64, UInt64)] = [
                ("a", 2, 1, 2), ("b", 3, 2, 3), ("x", 2, 1, 20), ("y", 3, 20, 30), ("z", 4, 3, 40),
            ]
            for (label, version, parent, token) in requests {
                var request = AppendRequest(
                    scope: "s", version: version, payload: payload("s", version), parentToken: parent, token: token)
                if label == "x" || label == "y" { request.payload = Array("{\"label\":\"\(label)\"}".utf8) }
                store.append(request) { results.add(label, $0) }
            }
            #expect(await eventually { results.count == requests.count })
            guard case .postgres(_, let sqlState, let message) = results.failure("a") else {
                Issue.record("version 2 should fail with .postgres, got \(String(describing: results.outcome("a")))")
                return
            }
            #expect(sqlState == "P0001")
            #expect(message.contains("injected"))
            #expect(results.failure("b") == .versionConflict(scope: "s", expected: 2, attempted: 3))
            #expect(results.succeeded("x"))
            #expect(results.succeeded("y"))
            // z is numbered 4 and follows y's version 3 by number, but it was built on b.
            #expect(results.failure("z") == .staleBase(scope: "s", version: 4))
            let logged = try await store.changes(scope: "s", after: 0, limit: 10).records
            #expect(logged.map(\.version) == [1, 2, 3])
            #expect(
                logged.dropFirst().map { String(decoding: $0.payload, as: UTF8.self) } == [
                    #"{"label":"x"}"#, #"{"label":"y"}"#,
                ])
        }
    }

    /// The PostgreSQL counterpart of `SQLiteFileTests.aGapInTheLogIsReportedAsCorruption`: recovery
    /// checks the tail it reads and reports a gap, never papers over it.
    @Test func aGapInTheLogIsReportedAsCorruption() async throws {
        try await withStoreLocation(.postgres) { location in
            let store = try location.openPostgres()
            defer { store.close() }
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await appendVersions(store, "a", 1...4)
            try await PostgresTestCluster.shared().psql(
                "DELETE FROM jetstream.changes WHERE version = 2", database: try #require(location.database))
            let expected = StoreError.corrupt(
                path: store.target.description, message: "scope 'a' log jumps from 1 to 3")
            await #expect(throws: expected) { try await store.recover { _ in } }
            await #expect(throws: expected) { try await store.recoverScope(named: "a") }
        }
    }
}
