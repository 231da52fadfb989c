import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

/// The past of a scope in the engine, on a real SQLite store (docs/history.md): what each change
/// set records, reads at a version, restore and revert beside other writers.
@Suite struct PastEngineTests {
    /// The milliseconds the engine's wall clock answers, set by the test.
    final class ManualClock: Sendable {
        let now: Mutex<Int64>
        init(_ now: Int64) { self.now = Mutex(now) }
    }

    /// A fixture whose wall clock the test sets, with small snapshot and history bounds.
    static func fixture(clock: ManualClock? = nil, historyLimit: Int = 6) throws -> EngineFixture {
        var configuration = ScopeEngineConfiguration(
            schema: .demo, historyLimit: historyLimit, resumeBufferSize: 4, snapshotInterval: 3)
        if let clock { configuration.wallClock = { clock.now.withLock { $0 } } }
        return try EngineFixture(configuration: configuration)
    }

    static func payload(_ outcome: SubmitOutcome) throws -> JSONValue {
        guard case .accepted(let body, _) = outcome else { throw Failure("not accepted: \(outcome)") }
        return try JSONParser.parse(body)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func restore(_ fixture: EngineFixture, _ handle: ScopeHandle, to version: Int) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            fixture.engine.restore(handle, to: version) { continuation.resume(returning: $0) }
        }
    }

    static func revert(_ fixture: EngineFixture, _ handle: ScopeHandle, _ version: Int) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            fixture.engine.revert(handle, changeSet: version) { continuation.resume(returning: $0) }
        }
    }

    @Test("a change set records the wall clock's time in RFC 3339 with milliseconds, and its subject")
    func atAndSubject() async throws {
        let clock = ManualClock(1_795_851_870_836)  // 2026-11-28T07:44:30.836Z
        let fixture = try Self.fixture(clock: clock)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let outcome = await withCheckedContinuation { continuation in
            fixture.engine.submit(
                ChangeSet(json: EngineFixture.rename(handle, to: "a")), to: handle,
                origin: ChangeOrigin(subject: "ada")
            ) { continuation.resume(returning: $0) }
        }
        let answer = try Self.payload(outcome)
        #expect(answer["at"]?.string == "2026-11-28T07:44:30.836Z")
        #expect(answer["subject"]?.string == "ada")
        clock.now.withLock { $0 = 0 }
        let anonymous = try Self.payload(await fixture.submit(EngineFixture.rename(handle, to: "b"), to: handle))
        #expect(anonymous["at"]?.string == "1970-01-01T00:00:00.000Z")
        #expect(anonymous["subject"] == JSONValue.null)
        // What is stored is what was answered and broadcast.
        let logged = try await fixture.store.changes(scope: handle.name, after: 0, limit: 10).records
        #expect(try JSONParser.parse(logged[0].payload)["at"]?.string == "2026-11-28T07:44:30.836Z")
    }

    @Test("RFC 3339 times across leap years, centuries and before 1970")
    func times() {
        #expect(ChangeTime.rfc3339(millisecondsSince1970: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(ChangeTime.rfc3339(millisecondsSince1970: 4_107_542_399_999) == "2100-02-28T23:59:59.999Z")
        #expect(ChangeTime.rfc3339(millisecondsSince1970: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test("RFC 3339 times read back: what is written, fractions, offsets; malformed ones are nil")
    func timesReadBack() {
        var generator = SystemRandomNumberGenerator()
        let samples: [Int64] =
            [0, -1, 951_782_400_000, 4_107_542_399_999, 1_795_884_715_364]
            + (0..<200).map { _ in Int64.random(in: -2_000_000_000_000...8_000_000_000_000, using: &generator) }
        for milliseconds in samples {
            let text = ChangeTime.rfc3339(millisecondsSince1970: milliseconds)
            #expect(ChangeTime.milliseconds(rfc3339: text) == milliseconds, "\(text)")
        }
        #expect(ChangeTime.milliseconds(rfc3339: "2026-11-28T16:23:24Z") == 1_795_883_004_000)
        #expect(ChangeTime.milliseconds(rfc3339: "2026-11-28t16:23:24.5z") == 1_795_883_004_500)
        #expect(ChangeTime.milliseconds(rfc3339: "2026-11-28T17:23:24.123456+01:00") == 1_795_883_004_123)
        #expect(ChangeTime.milliseconds(rfc3339: "2026-11-28T15:53:24.123-00:30") == 1_795_883_004_123)
        for malformed in [
            "", "yesterday", "1700000000000", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-28 16:23:24Z",
            "2026-11-28T24:00:00Z", "2026-11-28T16:23:24", "2026-11-28T16:23:24.Z", "2026-11-28T16:23:24+0100",
            "2026-11-28T16:23:24Zjunk",
        ] {
            #expect(ChangeTime.milliseconds(rfc3339: malformed) == nil, "\(malformed)")
        }
    }

    @Test("every readable version reads back as it was; older ones are gone, newer ones not found")
    func readsAtEveryVersion() async throws {
        let fixture = try Self.fixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        var states: [Int: [UInt8]] = [0: handle.encodedState().json]
        for index in 0..<14 {
            let fragments =
                index % 3 == 0
                ? EngineFixture.addShape(UUID(), x: Double(index), to: handle)
                : EngineFixture.rename(handle, to: "name \(index)")
            let version = try #require(await fixture.submit(fragments, to: handle).version)
            states[version] = handle.encodedState().json
        }
        let oldest = handle.runtime.withLock { $0.oldestResumable }
        #expect(oldest >= 14 - 6)
        for version in oldest...14 {
            #expect(
                try await fixture.engine.state(of: handle, at: version).json == states[version], "version \(version)")
        }
        do {
            _ = try await fixture.engine.state(of: handle, at: oldest - 1)
            Issue.record("version \(oldest - 1) should be gone")
        } catch .versionGone(_, _, let reported, let current) {
            #expect(reported == oldest)
            #expect(current == 14)
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            _ = try await fixture.engine.state(of: handle, at: 15)
            Issue.record("version 15 should not be found")
        } catch .versionNotFound(_, let version, let current) {
            #expect(version == 15)
            #expect(current == 14)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a restore beside a writer undoes exactly what came after the version, keeps what came after itself")
    func restoreBesideAWriter() async throws {
        let fixture = try Self.fixture(historyLimit: 100)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let kept = UUID()
        let base = try #require(
            await fixture.submit(EngineFixture.addShape(kept, x: 1, to: handle), to: handle).version)
        let target = handle.committedState
        await fixture.addShapes(3, to: handle)
        // Renames race the restore: each lands before or after it, never lost inside it.
        let outcomes = await withTaskGroup(of: (String, SubmitOutcome).self) { group in
            for index in 0..<8 {
                group.addTask {
                    ("rename", await fixture.submit(EngineFixture.rename(handle, to: "w\(index)"), to: handle))
                }
            }
            group.addTask { ("restore", await Self.restore(fixture, handle, to: base)) }
            var all: [(String, SubmitOutcome)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.allSatisfy { $0.1.version != nil })
        let restoredAt = try #require(outcomes.first { $0.0 == "restore" }?.1.version)
        let restoredPayload = try await fixture.store.changes(
            scope: handle.name, after: Int64(restoredAt - 1), limit: 1
        ).records[0].payload
        #expect(try JSONParser.parse(restoredPayload)["restoredFrom"]?.number?.int64Value == Int64(base))
        // The shapes are the target's; the name is the last rename's that landed after the
        // restore (or the target's when none did).
        let state = handle.committedState
        #expect(state.root["shapes"] == target.root["shapes"])
        #expect(state.count == target.count)
        let renamedAfter = outcomes.filter { $0.0 == "rename" && ($0.1.version ?? 0) > restoredAt }
        if renamedAfter.isEmpty { #expect(state.root["name"] == target.root["name"]) }
        // Nothing left to change: the same version answers, none is made.
        let again = await Self.restore(fixture, handle, to: restoredAt)
        #expect(again.version == handle.version)
    }

    @Test("a revert undoes an add, a change and a removal; a later write to the same property conflicts")
    func revertAndConflicts() async throws {
        let fixture = try Self.fixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let shape = UUID()
        let added = try #require(
            await fixture.submit(EngineFixture.addShape(shape, x: 1, to: handle), to: handle).version)
        let renamed = try #require(await fixture.submit(EngineFixture.rename(handle, to: "first"), to: handle).version)
        // Undo the add: the shape leaves.
        let undoneAdd = await Self.revert(fixture, handle, added)
        #expect(try Self.payload(undoneAdd)["removed"]?.array?.map(\.string) == [shape.wireString])
        #expect(try Self.payload(undoneAdd)["revertOf"]?.number?.int64Value == Int64(added))
        #expect(!handle.committedState.contains(shape))
        // Undo that undo: the shape comes back as it was.
        let back = try #require(undoneAdd.version)
        #expect(await Self.revert(fixture, handle, back).version != nil)
        #expect(handle.committedState.object(shape)?["x"] == Value.float(1))
        // A later rename wrote the name again: reverting the first rename conflicts, nothing applied.
        _ = await fixture.submit(EngineFixture.rename(handle, to: "second"), to: handle)
        let before = handle.version
        let refused = await Self.revert(fixture, handle, renamed)
        guard case .rejected(.revertConflict(_, let version, let conflicts)) = refused else {
            Issue.record("expected a conflict, got \(refused)")
            return
        }
        #expect(version == renamed)
        #expect(conflicts == [RevertConflict(uuid: handle.committedState.rootUUID, property: "name", version: before)])
        #expect(handle.version == before)
        let missing = await Self.revert(fixture, handle, before + 5)
        guard case .rejected(.versionNotFound) = missing else {
            Issue.record("a revert of a version ahead: \(missing)")
            return
        }
    }

    @Test("undo twice: an add, a move, the move undone; the add can still be undone, and a retried revert replays")
    func undoTwice() async throws {
        let fixture = try Self.fixture(historyLimit: 100)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let shape = UUID()
        let added = try #require(
            await fixture.submit(EngineFixture.addShape(shape, x: 1, to: handle), to: handle).version)
        let move: [JSONValue] = [
            ["type": "change", "uuid": .string(shape.wireString), "clsName": "Shape", "properties": ["x": 40]]
        ]
        let moved = try #require(await fixture.submit(move, to: handle).version)
        let key = IdempotencyKey(key: "undo-\(moved)", target: "POST revert", body: [])
        let undoMove = await withCheckedContinuation { continuation in
            fixture.engine.revert(handle, changeSet: moved, idempotency: key) { continuation.resume(returning: $0) }
        }
        #expect(undoMove.version == moved + 1)
        #expect(handle.committedState.object(shape)?["x"] == Value.float(1))
        // The same request again (its answer was lost): the first outcome, not a conflict.
        let retried = await withCheckedContinuation { continuation in
            fixture.engine.revert(handle, changeSet: moved, idempotency: key) { continuation.resume(returning: $0) }
        }
        guard case .replayed(let record) = retried else {
            Issue.record("a retried revert should replay, got \(retried)")
            return
        }
        #expect(record.version == Int64(moved + 1))
        // The move and its undo cancel out: the add is undone, the shape leaves.
        let undoAdd = await Self.revert(fixture, handle, added)
        #expect(undoAdd.version == moved + 2, "\(undoAdd)")
        #expect(!handle.committedState.contains(shape))
    }

    @Test("the history scan's byte search finds a UUID at the start, the end and inside, and nothing else")
    func byteSearch() {
        let needle = Array("5f0c61d2".utf8)
        #expect(ScopeEngine.contains(Array("5f0c61d2 tail".utf8), needle))
        #expect(ScopeEngine.contains(Array("head 5f0c61d2".utf8), needle))
        #expect(ScopeEngine.contains(Array("55f5f0c5f0c61d2x".utf8), needle))
        #expect(!ScopeEngine.contains(Array("5f0c61d".utf8), needle))
        #expect(!ScopeEngine.contains(Array("5f0c61d3 5f0c61d".utf8), needle))
        #expect(!ScopeEngine.contains([], needle))
    }
}
