import Foundation
import JetstreamModel
import Synchronization
import Testing

@testable import ScopeEngine
@testable import Store

/// What a submission ends in when the store refuses it, when it carries an idempotency key, and
/// when a version was committed elsewhere.
@Suite("Failed appends, idempotent replay and versions committed elsewhere")
struct CommitOutcomeTests {
    /// A change set another node committed on top of `state`: a shape added, as its log record.
    private static func committedElsewhere(adding shape: UUID, to state: ScopeState) throws -> ChangeRecord {
        let outcome = state.applying(
            ChangeSet(json: EngineFixture.addShape(shape, x: 99, to: state)), schema: .demo)
        let applied = try #require(outcome.applied)
        return ChangeRecord(version: Int64(applied.state.version), payload: ScopeEvent.changeset(applied).payload)
    }

    /// Pauses the commit thread and queues another writer's version (a new shape on the committed
    /// state, one version up) ahead of anything this engine stages next; returns it and its shape.
    private static func queueCommittedElsewhere(
        to handle: ScopeHandle, _ fixture: EngineFixture,
        completion: @escaping @Sendable (Result<Void, StoreError>) -> Void = { _ in }
    ) async throws -> (record: ChangeRecord, shape: UUID) {
        fixture.store.pauseCommits()
        let shape = UUID()
        let record = try committedElsewhere(adding: shape, to: handle.committedState)
        fixture.store.append(
            AppendRequest(scope: handle.name, version: record.version, payload: record.payload), completion: completion)
        #expect(await waitUntil { fixture.store.pendingOperationCount == 1 })
        return (record, shape)
    }

    /// Submits a shape built on the staged state (so it depends on every change set staged before
    /// it) without waiting; its outcome goes to `outcomes[index]`.
    private static func stage(
        _ shape: UUID, on handle: ScopeHandle, _ fixture: EngineFixture, _ outcomes: Outcomes, _ index: Int
    ) {
        let tip = handle.runtime.withLock { $0.tip }
        fixture.engine.submit(
            ChangeSet(json: EngineFixture.addShape(shape, x: Double(index), to: tip)), to: handle,
            completion: outcomes.completion(index))
    }

    private static func isStoreFailure(_ outcome: SubmitOutcome?, _ expected: (StoreError) -> Bool) -> Bool {
        guard case .rejected(.store(let error)) = outcome else { return false }
        return expected(error)
    }

    private static func isConflict(_ outcome: SubmitOutcome?, expected: Int64, attempted: Int64) -> Bool {
        isStoreFailure(outcome) { $0 == .versionConflict(scope: "canvas-1", expected: expected, attempted: attempted) }
    }

    @Test("a failed append rolls back the staged state and every version staged on it")
    func failedAppendRollsBack() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])
        let recorder = fixture.subscribe(to: handle, from: .after(1))
        let before = handle.encodedState().json

        // Stage versions 2, 3, 4 (each built on the one before) while the commit thread waits.
        fixture.store.pauseCommits()
        let outcomes = Outcomes()
        let shapes = (0..<3).map { _ in UUID() }
        for (index, shape) in shapes.enumerated() {
            Self.stage(shape, on: handle, fixture, outcomes, index)
            #expect(await waitUntil { fixture.store.pendingOperationCount == index + 1 })
        }
        #expect(handle.runtime.withLock { $0.tip.version } == 4)
        #expect(handle.version == 1)
        #expect(outcomes.count == 0)

        // From now on the store itself refuses to log a change set.
        let connection = try SQLiteConnection(path: fixture.storePath)
        try connection.execute(
            "CREATE TRIGGER refuse_changes BEFORE INSERT ON changes BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        fixture.store.resumeCommits()
        #expect(await outcomes.waitFor(count: 3))

        #expect(
            Self.isStoreFailure(outcomes[0]) { error in
                if case .sqlite(_, _, let message) = error { return message.contains("injected failure") }
                return false
            })
        #expect(Self.isConflict(outcomes[1], expected: 2, attempted: 3))
        #expect(Self.isConflict(outcomes[2], expected: 2, attempted: 4))
        #expect(handle.version == 1)
        #expect(handle.runtime.withLock { $0.tip.version } == 1)
        #expect(handle.encodedState().json == before)
        #expect(shapes.allSatisfy { !handle.committedState.contains($0) })
        #expect(recorder.events.isEmpty)

        // Once the store works again the next change set builds on the durable state.
        try connection.execute("DROP TRIGGER refuse_changes")
        let next = UUID()
        let accepted = await fixture.submit(EngineFixture.addShape(next, x: 5, to: handle), to: handle)
        #expect(accepted.version == 2)
        #expect(handle.committedState.contains(next))
        #expect(shapes.allSatisfy { !handle.committedState.contains($0) })
        #expect(await recorder.waitFor(count: 1))
        #expect(recorder.received == [.init(kind: .changeset, version: 2)])
        let logged = try fixture.store.changes(scope: "canvas-1", after: 1, limit: 10)
        #expect(logged.records.map(\.version) == [2])
        #expect(logged.records.first?.payload == recorder.events.first?.payload)
    }

    @Test("a version committed elsewhere takes the slot: the staged append fails and the next builds on it")
    func committedElsewhereRollsBack() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])
        let recorder = fixture.subscribe(to: handle, from: .after(1))

        let stored = Mutex<Result<Void, StoreError>?>(nil)
        let (external, externalShape) = try await Self.queueCommittedElsewhere(to: handle, fixture) { result in
            stored.withLock { $0 = result }
        }
        let outcomes = Outcomes()
        let localShape = UUID()
        Self.stage(localShape, on: handle, fixture, outcomes, 0)
        #expect(await waitUntil { fixture.store.pendingOperationCount == 2 })

        #expect(try fixture.engine.acceptCommitted(external, to: handle) == .applied)
        #expect(handle.version == 2)
        #expect(recorder.received == [.init(kind: .changeset, version: 2)])
        #expect(recorder.events.first?.payload == external.payload)

        fixture.store.resumeCommits()
        #expect(await outcomes.waitFor(count: 1))
        #expect(await waitUntil { stored.withLock { $0 } != nil })
        #expect(Self.isConflict(outcomes[0], expected: 3, attempted: 2))
        #expect(handle.version == 2)
        #expect(handle.runtime.withLock { $0.tip.version } == 2)
        #expect(handle.committedState.contains(externalShape))
        #expect(!handle.committedState.contains(localShape))

        let next = UUID()
        #expect(await fixture.submit(EngineFixture.addShape(next, x: 1, to: handle), to: handle).version == 3)
        #expect(handle.committedState.contains(externalShape))
        #expect(handle.committedState.contains(next))
        #expect(!handle.committedState.contains(localShape))
        #expect(await recorder.waitFor(count: 2))
        #expect(recorder.received == [.init(kind: .changeset, version: 2), .init(kind: .changeset, version: 3)])
    }

    @Test("a version committed elsewhere supersedes the staged ones it replaces; the next write builds on it")
    func committedElsewhereSupersedesStaged() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])

        // The store takes another writer's version 2 first; this engine stages C (2) and D (3, on C).
        let (external, externalShape) = try await Self.queueCommittedElsewhere(to: handle, fixture)
        let outcomes = Outcomes()
        let (shapeC, shapeD, shapeE) = (UUID(), UUID(), UUID())
        Self.stage(shapeC, on: handle, fixture, outcomes, 0)
        Self.stage(shapeD, on: handle, fixture, outcomes, 1)
        #expect(handle.runtime.withLock { $0.tip.version } == 3)

        // The other writer's version arrives: C and D can no longer be logged, so E builds on it.
        #expect(try fixture.engine.acceptCommitted(external, to: handle) == .applied)
        #expect(handle.runtime.withLock { $0.tip.version } == 2)
        Self.stage(shapeE, on: handle, fixture, outcomes, 2)
        #expect(await waitUntil { fixture.store.pendingOperationCount == 4 })
        fixture.store.resumeCommits()
        #expect(await outcomes.waitFor(count: 3))

        #expect(Self.isConflict(outcomes[0], expected: 3, attempted: 2))
        #expect(Self.isStoreFailure(outcomes[1]) { $0 == .staleBase(scope: "canvas-1", version: 3) })
        #expect(outcomes[2]?.version == 3)
        let state = handle.committedState
        #expect(state.version == 3)
        #expect(state.contains(externalShape) && state.contains(shapeE))
        #expect(!state.contains(shapeC) && !state.contains(shapeD))
        let logged = try fixture.store.changes(scope: "canvas-1", after: 1, limit: 10)
        #expect(logged.records.map(\.version) == [2, 3])

        fixture.close()
        let restarted = try EngineFixture(directory: fixture.directory)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let reloaded = try #require(restarted.engine.handle(named: "canvas-1"))
        #expect(reloaded.encodedState().json == handle.encodedState().json)
    }

    @Test("a change set staged on a failed one is not logged when another writer's version filled the gap")
    func stagedOnFailedIsNotLogged() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])

        // Another writer of the same store logs version 2 first; this engine stages 2 and 3.
        let (external, externalShape) = try await Self.queueCommittedElsewhere(to: handle, fixture)
        let outcomes = Outcomes()
        let first = UUID()
        let second = UUID()
        Self.stage(first, on: handle, fixture, outcomes, 0)
        Self.stage(second, on: handle, fixture, outcomes, 1)
        #expect(await waitUntil { fixture.store.pendingOperationCount == 3 })
        fixture.store.resumeCommits()
        #expect(await outcomes.waitFor(count: 2))

        #expect(Self.isConflict(outcomes[0], expected: 3, attempted: 2))
        // Version 3 was built on the failed version 2: it must not be logged nor become the state.
        #expect(outcomes[1]?.version == nil)
        #expect(!handle.committedState.contains(first))
        let logged = try fixture.store.changes(scope: "canvas-1", after: 1, limit: 10)
        #expect(logged.records.map(\.version) == [2])
        // Whatever the store holds must load again: a restart replays the log through the model.
        fixture.close()
        let restarted = try EngineFixture(directory: fixture.directory)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let reloaded = try #require(restarted.engine.handle(named: "canvas-1"))
        #expect(reloaded.version == 2)
        #expect(reloaded.committedState.contains(externalShape))
    }

    @Test("resubmitting right after a failed append never logs a version on top of one it was not built on")
    func resubmitAfterFailure() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])

        // The store refuses the change set that adds shape A, and only that one.
        let shapeA = UUID()
        let connection = try SQLiteConnection(path: fixture.storePath)
        try connection.execute(
            """
            CREATE TRIGGER refuse_a BEFORE INSERT ON changes
            WHEN instr(CAST(NEW.payload AS TEXT), '\(shapeA.wireString)') > 0
            BEGIN SELECT RAISE(ABORT, 'injected failure'); END
            """)
        // A (2) and B (3, built on A) are staged; as each fails its writer resubmits at once: X after A's
        // failure, then Z and W (built on Z) after B's.
        let outcomes = Outcomes()
        let shapeB = UUID()
        let shapeX = UUID()
        let shapeZ = UUID()
        let shapeW = UUID()
        let shapes = [shapeA, shapeB, shapeX, shapeZ, shapeW]
        fixture.store.pauseCommits()
        let stageA = ChangeSet(json: EngineFixture.addShape(shapeA, x: 0, to: handle.committedState))
        fixture.engine.submit(stageA, to: handle) { outcome in
            outcomes.completion(0)(outcome)
            Self.stage(shapeX, on: handle, fixture, outcomes, 2)
        }
        let afterA = handle.runtime.withLock { $0.tip }
        fixture.engine.submit(ChangeSet(json: EngineFixture.addShape(shapeB, x: 1, to: afterA)), to: handle) {
            outcome in
            outcomes.completion(1)(outcome)
            Self.stage(shapeZ, on: handle, fixture, outcomes, 3)
            Self.stage(shapeW, on: handle, fixture, outcomes, 4)
        }
        #expect(await waitUntil { fixture.store.pendingOperationCount == 2 })
        fixture.store.resumeCommits()
        #expect(await outcomes.waitFor(count: 5))
        #expect(Self.isStoreFailure(outcomes[0]) { _ in true })
        #expect(Self.isConflict(outcomes[1], expected: 2, attempted: 3))
        #expect(outcomes[2]?.version == 2)

        // Every accepted shape is in the state and no refused one is; a restart loads the same state.
        let state = handle.committedState
        for (index, shape) in shapes.enumerated() {
            #expect(state.contains(shape) == (outcomes[index]?.version != nil), "shape \(index)")
        }
        fixture.close()
        let restarted = try EngineFixture(directory: fixture.directory)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let reloaded = try #require(restarted.engine.handle(named: "canvas-1"))
        #expect(reloaded.encodedState().json == handle.encodedState().json)
    }

    @Test("an idempotency key replays its first outcome; another body under the key is refused")
    func idempotentReplay() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let change = EngineFixture.addShape(UUID(), x: 1, to: handle)
        let first = await fixture.submitOnce(change, to: handle, key: "K")
        guard case .accepted(let body, 1) = first else {
            Issue.record("expected an accepted version 1, got \(first)")
            return
        }
        let answer = try JSONParser.parse(body)
        #expect(answer["version"] == .number(JSONNumber(1)))
        #expect(answer["fragmentReplies"]?.array?.count == 2)

        let retry = await fixture.submitOnce(change, to: handle, key: "K")
        guard case .replayed(let record) = retry else {
            Issue.record("expected a replay, got \(retry)")
            return
        }
        #expect(record.response == body)
        #expect(record.status == 200)
        #expect(record.version == 1)
        #expect(record.key == "K")
        #expect(handle.version == 1)

        let other = EngineFixture.addShape(UUID(), x: 2, to: handle)
        let reused = await fixture.submitOnce(other, to: handle, key: "K")
        guard case .idempotencyKeyReused("K") = reused.error else {
            Issue.record("expected idempotencyKeyReused, got \(reused)")
            return
        }
        #expect(handle.version == 1)
        // Keys are per scope: the same key on another scope is a first request.
        let elsewhere = try await fixture.createCanvas("canvas-2")
        let otherScope = await fixture.submitOnce(
            EngineFixture.addShape(UUID(), x: 3, to: elsewhere), to: elsewhere, key: "K")
        #expect(otherScope.version == 1)
    }

    @Test("a rejected change set with a key is stored and replayed with the configured encoding")
    func rejectionReplayed() async throws {
        for custom in [false, true] {
            var configuration = ScopeEngineConfiguration(schema: .demo)
            if custom {
                configuration.encodeRejection = { error in
                    if case .changeSetRejected = error { return (409, Array("rejected".utf8)) }
                    return (500, [])
                }
            }
            let fixture = try EngineFixture(configuration: configuration)
            defer {
                fixture.close()
                fixture.removeFiles()
            }
            let handle = try await fixture.createCanvas()
            let bad: [JSONValue] = [
                ["type": "add", "uuid": .string(UUID().wireString), "clsName": "Shape", "properties": ["x": "one"]]
            ]
            let first = await fixture.submitOnce(bad, to: handle, key: "R")
            guard case .changeSetRejected = first.error else {
                Issue.record("expected changeSetRejected, got \(first)")
                return
            }
            let retry = await fixture.submitOnce(bad, to: handle, key: "R")
            guard case .replayed(let record) = retry else {
                Issue.record("expected a replay, got \(retry)")
                return
            }
            #expect(record.version == nil)
            if custom {
                #expect(record.status == 409)
                #expect(record.response == Array("rejected".utf8))
            } else {
                #expect(record.status == 422)
                let problem = try JSONParser.parse(record.response)
                #expect(problem["detail"]?.string?.contains("1 of 1 fragments were rejected") == true)
            }
            // A version precondition that fails is final as well.
            let stale = EngineFixture.addShape(UUID(), x: 1, to: handle)
            let mismatch = await withCheckedContinuation { continuation in
                fixture.engine.submitOnce(
                    ChangeSet(json: stale), to: handle, ifMatch: .versions([5]),
                    idempotency: IdempotencyKey(key: "M", body: EngineFixture.body(stale))
                ) { continuation.resume(returning: $0) }
            }
            guard case .versionMismatch(current: 0) = mismatch.error else {
                Issue.record("expected versionMismatch, got \(mismatch)")
                return
            }
            let replayedMismatch = await fixture.submitOnce(stale, to: handle, key: "M")
            guard case .replayed(let mismatchRecord) = replayedMismatch else {
                Issue.record("expected the mismatch to be replayed, got \(replayedMismatch)")
                return
            }
            #expect(mismatchRecord.status == (custom ? 500 : 422))
            #expect(handle.version == 0)
        }
    }

    @Test("a version committed elsewhere is applied once and published; a duplicate is known, a jump a gap")
    func acceptCommitted() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(2, to: handle) == [1, 2])
        let recorder = fixture.subscribe(to: handle, from: .after(2))

        let shape = UUID()
        let record = try Self.committedElsewhere(adding: shape, to: handle.committedState)
        #expect(record.version == 3)
        // The other node logged it in the shared store.
        try await fixture.store.append(AppendRequest(scope: "canvas-1", version: 3, payload: record.payload))
        #expect(try fixture.engine.acceptCommitted(record, to: handle) == .applied)
        #expect(handle.version == 3)
        #expect(handle.committedState.contains(shape))
        #expect(recorder.received == [.init(kind: .changeset, version: 3)])
        #expect(recorder.events.first?.payload == record.payload)
        #expect(handle.runtime.withLock { $0.recent.lastVersion } == 3)

        #expect(try fixture.engine.acceptCommitted(record, to: handle) == .known)
        let older = ChangeRecord(version: 1, payload: [])
        #expect(try fixture.engine.acceptCommitted(older, to: handle) == .known)
        let ahead = try Self.committedElsewhere(adding: UUID(), to: handle.committedState)
        let jump = ChangeRecord(version: 5, payload: ahead.payload)
        #expect(try fixture.engine.acceptCommitted(jump, to: handle) == .gap(after: 3))
        #expect(handle.version == 3)
        #expect(recorder.events.count == 1)

        // Local writes build on it; a resume from before it gets it from the buffer.
        #expect(await fixture.addShapes(1, to: handle) == [4])
        let resumed = fixture.subscribe(to: handle, from: .after(2))
        #expect(resumed.received == [.init(kind: .changeset, version: 3), .init(kind: .changeset, version: 4)])
    }
}
