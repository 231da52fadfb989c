import Store
import Testing

/// Pipelined appends carry a lineage (parent token, token): a version built on one the log does not
/// hold is refused, even when its number fits.
@Suite struct LineageTests {
    /// Appends one version of scope `s`; nil when it was logged, else the store's error.
    private func append(_ store: SQLiteStore, _ version: Int64, parent: UInt64, token: UInt64) async -> StoreError? {
        do throws(StoreError) {
            try await store.append(
                AppendRequest(
                    scope: "s", version: version, payload: payload("s", version), parentToken: parent, token: token))
            return nil
        } catch {
            return error
        }
    }

    @Test func aVersionBuiltOnTheHeadIsLoggedOneBuiltOnAnotherIsRefused() async throws {
        try await withStore { store, _ in
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            // The first append of a new scope has nothing to check against.
            #expect(await append(store, 1, parent: 0, token: 11) == nil)
            #expect(await append(store, 2, parent: 11, token: 12) == nil)
            // Version 3 numbered right but built on a version 2 that is not the logged one.
            #expect(await append(store, 3, parent: 99, token: 13) == .staleBase(scope: "s", version: 3))
            #expect(try store.scope(named: "s")?.version == 2)
            #expect(await append(store, 3, parent: 12, token: 13) == nil)
            // Without a parent token only the number is checked.
            #expect(await append(store, 4, parent: 0, token: 0) == nil)
            // After an untokened version no parent token matches.
            #expect(await append(store, 5, parent: 13, token: 15) == .staleBase(scope: "s", version: 5))
            #expect(await append(store, 5, parent: 0, token: 15) == nil)
            #expect(await append(store, 6, parent: 15, token: 16) == nil)
        }
    }

    @Test func afterARestartNoHeadIsKnownSoOnlyAnAppendWithoutParentIsLogged() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            var store = try SQLiteStore(path: path)
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            #expect(await append(store, 1, parent: 0, token: 21) == nil)
            store.close()
            store = try SQLiteStore(path: path)
            defer { store.close() }
            // A parent token names a version this process logged; after a restart none is known.
            #expect(await append(store, 2, parent: 21, token: 22) == .staleBase(scope: "s", version: 2))
            #expect(await append(store, 2, parent: 0, token: 22) == nil)
            #expect(await append(store, 3, parent: 22, token: 23) == nil)
        }
    }

    @Test func aFailedAppendDoesNotBecomeTheHeadWithinOneBatch() async throws {
        try await withStore { store, path in
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            #expect(await append(store, 1, parent: 0, token: 1) == nil)
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
}
