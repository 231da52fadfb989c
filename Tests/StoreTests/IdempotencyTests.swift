import Store
import Testing

@Suite struct IdempotencyTests {
    static func settings(clock: ManualClock) -> StoreSettings {
        var settings = StoreSettings()
        settings.idempotencyTTLMilliseconds = 1000
        settings.clock = clock.read
        return settings
    }

    static func record(_ key: String, status: Int, response: String) -> IdempotencyRecord {
        IdempotencyRecord(
            key: key, requestDigest: Array("digest-\(key)".utf8), status: status, response: Array(response.utf8))
    }

    @Test(arguments: StoreKind.allCases)
    func acceptedAndRejectedOutcomesAreStoredAndReplayed(kind: StoreKind) async throws {
        let clock = ManualClock()
        try await withStore(kind, settings: Self.settings(clock: clock)) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            let accepted = Self.record("k1", status: 200, response: "{\"version\":1}")
            try await store.append(AppendRequest(scope: "a", version: 1, payload: [1], idempotency: accepted))
            try await store.recordRejection(scope: "a", Self.record("k2", status: 422, response: "problem"))

            let first = try #require(await store.idempotencyRecord(scope: "a", key: "k1"))
            #expect(first.version == 1)
            #expect(first.status == 200)
            #expect(first.requestDigest == Array("digest-k1".utf8))
            #expect(first.response == Array("{\"version\":1}".utf8))
            #expect(first.createdAtMilliseconds == clock.milliseconds)
            let rejected = try #require(await store.idempotencyRecord(scope: "a", key: "k2"))
            #expect(rejected.version == nil)
            #expect(rejected.status == 422)
            #expect(rejected.response == Array("problem".utf8))
            // A rejection consumes no version.
            #expect(try await store.scope(named: "a")?.version == 1)
            #expect(try await store.idempotencyRecord(scope: "a", key: "k3") == nil)
            #expect(try await store.idempotencyRecord(scope: "b", key: "k1") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aLiveKeyCannotBeStoredTwiceAndTheChangeSetIsNotAppendedEither(kind: StoreKind) async throws {
        let clock = ManualClock()
        try await withStore(kind, settings: Self.settings(clock: clock)) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await store.append(
                AppendRequest(
                    scope: "a", version: 1, payload: [1], idempotency: Self.record("k", status: 200, response: "")))
            await #expect(throws: StoreError.idempotencyKeyExists(scope: "a", key: "k")) {
                try await store.append(
                    AppendRequest(
                        scope: "a", version: 2, payload: [2], idempotency: Self.record("k", status: 200, response: "")))
            }
            await #expect(throws: StoreError.idempotencyKeyExists(scope: "a", key: "k")) {
                try await store.recordRejection(scope: "a", Self.record("k", status: 422, response: ""))
            }
            #expect(try await store.scope(named: "a")?.version == 1)
            #expect(try await store.changes(scope: "a", after: 0, limit: 10).records.count == 1)
            #expect(try await store.idempotencyRecord(scope: "a", key: "k")?.version == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func keysExpireAfterTheirTimeAndCanThenBeReused(kind: StoreKind) async throws {
        let clock = ManualClock()
        try await withStore(kind, settings: Self.settings(clock: clock)) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try await store.append(
                AppendRequest(
                    scope: "a", version: 1, payload: [1], idempotency: Self.record("old", status: 200, response: "")))
            clock.advance(byMilliseconds: 600)
            try await store.recordRejection(scope: "a", Self.record("young", status: 422, response: ""))
            clock.advance(byMilliseconds: 600)

            #expect(try await store.idempotencyRecord(scope: "a", key: "old") == nil)
            #expect(try await store.idempotencyRecord(scope: "a", key: "young") != nil)
            // The expired key may be used again right away, before expiry removed it.
            try await store.append(
                AppendRequest(
                    scope: "a", version: 2, payload: [2],
                    idempotency: Self.record("old", status: 200, response: "again")))
            #expect(try await store.idempotencyRecord(scope: "a", key: "old")?.version == 2)

            clock.advance(byMilliseconds: 1100)
            #expect(try await store.expireIdempotencyRecords() == 2)
            #expect(try await store.idempotencyRecord(scope: "a", key: "old") == nil)
            #expect(try await store.expireIdempotencyRecords() == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func recordsAreDurableAndGoWithTheirScope(kind: StoreKind) async throws {
        let clock = ManualClock()
        try await withStoreLocation(kind, settings: Self.settings(clock: clock)) { location in
            do {
                let store = try location.open()
                defer { store.close() }
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                try await store.recordRejection(scope: "a", Self.record("k", status: 409, response: "conflict"))
            }
            let store = try location.open()
            defer { store.close() }
            #expect(try await store.idempotencyRecord(scope: "a", key: "k")?.status == 409)
            _ = try await store.deleteScope(named: "a")
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            #expect(try await store.idempotencyRecord(scope: "a", key: "k") == nil)
        }
    }
}
