import Foundation
import JetstreamModel
import Store
import Testing

@testable import ScopeEngine

/// An engine started on a store written under another schema (a real SQLite file, written by an
/// engine under the old schema and closed): recovery refuses every stored object the new schema
/// refuses, or loads them fixed by `onInvalid`; the store then records the new schema, streams open
/// across the change get `reset`, and history written under the old schema reads as the new one.
@Suite("Schema evolution in the engine")
struct SchemaEvolutionEngineTests {
    /// The schema the data is written under.
    static let written = try! Schema.parse(
        yaml: """
            models:
              Board:
                title: String?
                cards: [Card]
              Card:
                points: Int
                rank: Int
                obsolete: String?
            scopes:
              "board-*": { root: Board }
            """, file: "written.yaml")

    /// `points` renamed, `obsolete` dropped, `rank` tightened without `onInvalid`.
    static let strict = try! Schema.parse(
        yaml: """
            models:
              Board:
                title: String?
                cards: [Card]
              Card:
                score: { type: Int, renamedFrom: points }
                rank: { type: Int, min: 0, max: 10 }
            scopes:
              "board-*": { root: Board }
            """, file: "strict.yaml")

    /// ``strict`` with `onInvalid: clamp` on `rank`.
    static let fixing = try! Schema.parse(
        yaml: """
            models:
              Board:
                title: String?
                cards: [Card]
              Card:
                score: { type: Int, renamedFrom: points }
                rank: { type: Int, min: 0, max: 10, onInvalid: clamp }
            scopes:
              "board-*": { root: Board }
            """, file: "fixing.yaml")

    /// What ``writeUnderTheOldSchema()`` left in its directory.
    struct Stored {
        let directory: URL
        /// c1 (rank 14, in board-1's snapshot), c2 (rank 3, fits), c3 (rank -2, in board-1's log
        /// tail), c4 (rank 20, board-2).
        let c1, c2, c3, c4: UUID

        func removeFiles() { try? FileManager.default.removeItem(at: directory) }
    }

    /// board-1: v1 adds c1, v2 adds c2 (the snapshot is at v2), v3 adds c3 and changes c2's
    /// `obsolete`; board-2: v1 adds c4. The store is closed after.
    static func writeUnderTheOldSchema() async throws -> Stored {
        var configuration = ScopeEngineConfiguration(schema: written)
        configuration.snapshotInterval = 2
        let fixture = try EngineFixture(configuration: configuration)
        defer { fixture.close() }
        try await fixture.engine.recover()
        #expect(try fingerprint(in: fixture.store) == written.fingerprint, "the first start records its schema")
        let (c1, c2, c3, c4) = (UUID(), UUID(), UUID(), UUID())
        let one = try await fixture.engine.create(name: "board-1", rootClassName: "Board")
        let two = try await fixture.engine.create(name: "board-2", rootClassName: "Board")
        #expect(await fixture.submit(addCard(c1, ["points": 1, "rank": 14], to: one), to: one).version == 1)
        #expect(
            await fixture.submit(addCard(c2, ["points": 2, "rank": 3, "obsolete": "x"], to: one), to: one).version == 2)
        let third = addCard(c3, ["points": 3, "rank": -2], to: one) + [change(c2, ["obsolete": "y"])]
        #expect(await fixture.submit(third, to: one).version == 3)
        #expect(await fixture.submit(addCard(c4, ["points": 4, "rank": 20], to: two), to: two).version == 1)
        // The snapshot at v2 is written in the background: wait for it (c1 is then only in it).
        let deadline = ContinuousClock.now + .seconds(10)
        while try await snapshotVersion(of: "board-1", in: fixture.store) != 2 {
            guard ContinuousClock.now < deadline else {
                Issue.record("board-1's snapshot at version 2 was never written")
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return Stored(directory: fixture.directory, c1: c1, c2: c2, c3: c3, c4: c4)
    }

    static func snapshotVersion(of name: String, in store: SQLiteStore) async throws -> Int64? {
        var found: Int64?
        try await store.recover { scope in
            if scope.info.name == name { found = scope.snapshotVersion }
        }
        return found
    }

    /// The store's schema record, parsed (nil when there is none).
    static func schemaRecord(in store: SQLiteStore) throws -> JSONValue? {
        try store.metadata(key: "schema").map { try JSONParser.parse($0) }
    }

    static func fingerprint(in store: SQLiteStore) throws -> String? {
        try schemaRecord(in: store)?["fingerprint"]?.string
    }

    /// Adds a card with `properties` and appends it to the board's cards.
    static func addCard(_ card: UUID, _ properties: JSONObject, to handle: ScopeHandle) -> [JSONValue] {
        let state = handle.committedState
        var cards: [JSONValue] = state.root["cards"]?.referencedUUIDs.map { .string($0.wireString) } ?? []
        cards.append(.string(card.wireString))
        return [
            ["type": "add", "uuid": .string(card.wireString), "clsName": "Card", "properties": .object(properties)],
            [
                "type": "change", "uuid": .string(state.rootUUID.wireString), "clsName": "Board",
                "properties": ["cards": .array(cards)],
            ],
        ]
    }

    static func change(_ card: UUID, _ properties: JSONObject) -> JSONValue {
        ["type": "change", "uuid": .string(card.wireString), "clsName": "Card", "properties": .object(properties)]
    }

    static func retitle(_ handle: ScopeHandle, _ title: String) -> [JSONValue] {
        [
            [
                "type": "change", "uuid": .string(handle.committedState.rootUUID.wireString), "clsName": "Board",
                "properties": ["title": .string(title)],
            ]
        ]
    }

    static func restart(_ stored: Stored, under schema: Schema, resumeBufferSize: Int = 256) throws -> EngineFixture {
        var configuration = ScopeEngineConfiguration(schema: schema)
        configuration.resumeBufferSize = resumeBufferSize
        return try EngineFixture(configuration: configuration, directory: stored.directory)
    }

    /// The fragments of every change set of a history page.
    static func historyFragments(_ page: [UInt8]) throws -> [[JSONValue]] {
        let history = try JSONParser.parse(page)
        return try #require(history["changesets"]?.array).map { $0["fragments"]?.array ?? [] }
    }

    // MARK: Refusal

    @Test("recovery under a schema the stored values do not fit names every bad object of every scope, hosts nothing")
    func refusalListsEverything() async throws {
        let stored = try await Self.writeUnderTheOldSchema()
        defer { stored.removeFiles() }
        let restarted = try Self.restart(stored, under: Self.strict)
        defer { restarted.close() }

        let report = try await #require(throws: SchemaFitReport.self) { try await restarted.engine.recover() }
        #expect(!report.fits)
        #expect(report.failures.isEmpty, "\(report.failures)")
        let found = Set(
            report.problems.map {
                "\($0.scope) \($0.problem.uuid.wireString) \($0.problem.className).\($0.problem.property ?? "-")"
                    + " \($0.problem.value?.encodedString() ?? "-") \($0.problem.kind.rawValue)"
            })
        #expect(
            found == [
                "board-1 \(stored.c1.wireString) Card.rank 14 out-of-range",
                "board-1 \(stored.c3.wireString) Card.rank -2 out-of-range",
                "board-2 \(stored.c4.wireString) Card.rank 20 out-of-range",
            ])
        #expect(report.problems.count == 3)
        #expect(report.lines().last == "3 objects in 2 scopes do not fit the schema")
        #expect(report.lines(schemaName: "strict.yaml").last == "3 objects in 2 scopes do not fit strict.yaml")
        #expect(report.lines().contains("scope 'board-2' \(report.problems.first { $0.scope == "board-2" }!.problem)"))
        #expect(report.scopes == 2)
        #expect(report.objects == 6)
        #expect(report.fixedValues == 0)
        // Nothing is hosted, and the store still records the schema it was last served with.
        #expect(restarted.engine.handle(named: "board-1") == nil)
        #expect(restarted.engine.handle(named: "board-2") == nil)
        #expect(try Self.fingerprint(in: restarted.store) == Self.written.fingerprint)

        // check-schema's dry run finds the same, hosting nothing either.
        restarted.close()
        let checking = try Self.restart(stored, under: Self.strict)
        defer { checking.close() }
        let checked = try await checking.engine.checkStoredData()
        #expect(checked.problems == report.problems)
        #expect(checked.lines() == report.lines())
        #expect(checked.scopes == 2)
        #expect(checked.objects == 6)
        #expect(!checked.fits)
        #expect(checking.engine.handle(named: "board-1") == nil)
        #expect(checking.engine.handle(named: "board-2") == nil)
        #expect(try Self.fingerprint(in: checking.store) == Self.written.fingerprint)
        let json = checked.jsonValue
        #expect(json["fits"] == false)
        #expect(json["problems"]?.array?.count == 3)
        #expect(json["problems"]?.array?.first?["scope"] == "board-1")
    }

    // MARK: Recovery with onInvalid

    @Test("with onInvalid the store recovers fixed, renamed and trimmed, and records the new schema")
    func onInvalidRecovers() async throws {
        let stored = try await Self.writeUnderTheOldSchema()
        defer { stored.removeFiles() }
        do {
            let checking = try Self.restart(stored, under: Self.fixing)
            defer { checking.close() }
            let check = try await checking.engine.checkStoredData()
            #expect(check.fits)
            #expect(check.problems.isEmpty)
            #expect(check.fixedValues == 3)
            #expect(check.scopes == 2)
            #expect(check.lines().isEmpty)
            #expect(checking.engine.handle(named: "board-1") == nil)
        }
        let restarted = try Self.restart(stored, under: Self.fixing)
        defer { restarted.close() }
        let recovered = try await restarted.engine.recover()
        #expect(recovered.scopes == 2)
        let one = try #require(restarted.engine.handle(named: "board-1"))
        let two = try #require(restarted.engine.handle(named: "board-2"))
        #expect(one.version == 3)
        #expect(two.version == 1)
        let state = one.committedState
        #expect(state.root["cards"] == .references([stored.c1, stored.c2, stored.c3]))
        #expect(state.object(stored.c1)?["rank"] == .int(10))
        #expect(state.object(stored.c2)?["rank"] == .int(3))
        #expect(state.object(stored.c3)?["rank"] == .int(0))
        #expect(two.committedState.object(stored.c4)?["rank"] == .int(10))
        #expect(
            [stored.c1, stored.c2, stored.c3].map { state.object($0)?["score"] } == [.int(1), .int(2), .int(3)])
        #expect(state.object(stored.c2)?.propertiesJSON["obsolete"] == nil)
        #expect(state.object(stored.c2)?.propertiesJSON["points"] == nil)

        // The store records the new schema, and the version each scope had when it took over.
        let record = try #require(try Self.schemaRecord(in: restarted.store))
        #expect(record["fingerprint"]?.string == Self.fixing.fingerprint)
        #expect(record["schema"] == Self.fixing.jsonValue)
        #expect(record["boundaries"]?["board-1"]?.number?.int64Value == 3)
        #expect(record["boundaries"]?["board-2"]?.number?.int64Value == 1)

        // Writes go on under the new schema.
        #expect(await restarted.submit(Self.retitle(one, "after"), to: one).version == 4)
        #expect(
            await restarted.submit([Self.change(stored.c1, ["rank": 11])], to: one).error != nil,
            "the new bounds hold for new writes")
    }

    @Test("a second start under the same new schema reads the old log the same way")
    func secondStartUnderTheNewSchema() async throws {
        let stored = try await Self.writeUnderTheOldSchema()
        defer { stored.removeFiles() }
        do {
            let first = try Self.restart(stored, under: Self.fixing)
            defer { first.close() }
            try await first.engine.recover()
            let one = try #require(first.engine.handle(named: "board-1"))
            #expect(await first.submit(Self.retitle(one, "after"), to: one).version == 4)
        }
        let second = try Self.restart(stored, under: Self.fixing, resumeBufferSize: 1)
        defer { second.close() }
        try await second.engine.recover()
        let one = try #require(second.engine.handle(named: "board-1"))
        #expect(one.version == 4)
        #expect(one.committedState.object(stored.c1)?["rank"] == .int(10))
        #expect(one.committedState.object(stored.c3)?["score"] == .int(3))
        #expect(one.committedState.root["title"] == .string("after"))
        #expect(try Self.fingerprint(in: second.store) == Self.fixing.fingerprint)
        // History logged under the old schema still reads as the new one.
        let fragments = try Self.historyFragments(try await second.engine.history(of: one, since: 0, limit: 100))
        #expect(fragments.count == 4)
        for fragment in fragments.joined() {
            #expect(fragment["properties"]?["points"] == nil, "\(fragment)")
            #expect(fragment["properties"]?["obsolete"] == nil, "\(fragment)")
        }
        // A stream open across the change still gets a reset; one from after it, change sets.
        let across = second.subscribe(to: one, from: .after(2))
        let after = second.subscribe(to: one, from: .after(3))
        #expect(await across.waitFor(count: 1))
        #expect(await after.waitFor(count: 1))
        #expect(across.received == [.init(kind: .reset, version: 4)])
        #expect(after.received == [.init(kind: .reset, version: 4)], "version 3 is the boundary itself")
        let later = second.subscribe(to: one, from: .after(4))
        #expect(await second.submit(Self.retitle(one, "later"), to: one).version == 5)
        #expect(await later.waitFor(count: 1))
        #expect(later.received == [.init(kind: .changeset, version: 5)])
    }

    // MARK: Streams and history across the change

    @Test("a stream resuming from before the change gets a reset under the new schema; one after it, change sets")
    func resumeAcrossTheChange() async throws {
        let stored = try await Self.writeUnderTheOldSchema()
        defer { stored.removeFiles() }
        let restarted = try Self.restart(stored, under: Self.fixing)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let one = try #require(restarted.engine.handle(named: "board-1"))

        for point in [ResumePoint.after(1), .after(2), .after(3)] {
            let recorder = restarted.subscribe(to: one, from: point)
            #expect(await recorder.waitFor(count: 1))
            #expect(recorder.received == [.init(kind: .reset, version: 3)], "from \(point)")
            let state = try JSONParser.parse(try #require(recorder.events.first).payload)
            let cards = try #require(state["fragments"]?.array).filter { $0["clsName"] == "Card" }
            #expect(cards.count == 3)
            let c1 = try #require(cards.first { $0["uuid"]?.string == stored.c1.wireString })
            #expect(c1["properties"]?["rank"]?.number?.int64Value == 10)
            #expect(c1["properties"]?["score"]?.number?.int64Value == 1)
            #expect(c1["properties"]?["points"] == nil)
        }

        #expect(await restarted.submit(Self.retitle(one, "four"), to: one).version == 4)
        #expect(await restarted.submit(Self.retitle(one, "five"), to: one).version == 5)
        let fromFour = restarted.subscribe(to: one, from: .after(4))
        #expect(await fromFour.waitFor(count: 1))
        #expect(fromFour.received == [.init(kind: .changeset, version: 5)])
        let fromBoundary = restarted.subscribe(to: one, from: .after(3))
        #expect(await fromBoundary.waitFor(count: 1))
        #expect(fromBoundary.received == [.init(kind: .reset, version: 5)])
        // Each scope has its own boundary: board-2's is its version 1.
        let two = try #require(restarted.engine.handle(named: "board-2"))
        #expect(await restarted.submit(Self.retitle(two, "two"), to: two).version == 2)
        #expect(await restarted.submit(Self.retitle(two, "three"), to: two).version == 3)
        let twoAfter = restarted.subscribe(to: two, from: .after(2))
        let twoAtBoundary = restarted.subscribe(to: two, from: .after(1))
        #expect(await twoAfter.waitFor(count: 1))
        #expect(await twoAtBoundary.waitFor(count: 1))
        #expect(twoAfter.received == [.init(kind: .changeset, version: 3)])
        #expect(twoAtBoundary.received == [.init(kind: .reset, version: 3)])
    }

    @Test(
        "history logged under the old schema reads as the new one, from the store and from memory",
        arguments: [1, 256])
    func historyReadsAsTheNewSchema(resumeBufferSize: Int) async throws {
        let stored = try await Self.writeUnderTheOldSchema()
        defer { stored.removeFiles() }
        let restarted = try Self.restart(stored, under: Self.fixing, resumeBufferSize: resumeBufferSize)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let one = try #require(restarted.engine.handle(named: "board-1"))

        let page = try await restarted.engine.history(of: one, since: 0, limit: 100)
        let changeSets = try Self.historyFragments(page)
        #expect(changeSets.count == 3)
        for fragment in changeSets.joined() {
            #expect(fragment["properties"]?["points"] == nil, "\(fragment)")
            #expect(fragment["properties"]?["obsolete"] == nil, "\(fragment)")
        }
        let adds = changeSets.joined().filter { $0["type"] == "add" }
        #expect(adds.map { $0["uuid"]?.string } == [stored.c1, stored.c2, stored.c3].map(\.wireString))
        #expect(adds.map { $0["properties"]?["score"]?.number?.int64Value } == [1, 2, 3])
        #expect(adds.map { $0["properties"]?["rank"]?.number?.int64Value } == [10, 3, 0])

        // historyPage serves the same bytes; the last change set (the one replayed at start) too.
        let pageParts = try await restarted.engine.historyPage(of: one, since: 0, limit: 100)
        #expect(pageParts.encoded() == page)
        let last = try Self.historyFragments(try await restarted.engine.history(of: one, since: 2, limit: 100))
        #expect(last.count == 1)
        #expect(last.first?.contains { $0["properties"]?["obsolete"] != nil } == false)
        #expect(last.first?.first { $0["type"] == "add" }?["properties"]?["score"]?.number?.int64Value == 3)

        // A subscriber catching up after the boundary reads new change sets as they were written.
        #expect(await restarted.submit(Self.retitle(one, "four"), to: one).version == 4)
        let after = try Self.historyFragments(try await restarted.engine.history(of: one, since: 3, limit: 100))
        #expect(after.first?.first?["properties"]?["title"] == "four")
    }
}
