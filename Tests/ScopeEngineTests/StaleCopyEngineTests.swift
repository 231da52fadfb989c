import Foundation
import JetstreamModel
import Logging
import PostgresStore
import Store
import TestSupport
import Testing

@testable import ScopeEngine

/// A node asked to change what another node has just committed, before its own copy has caught
/// up: a refusal is judged at the store's latest version, never on the stale copy (docs/store.md,
/// "A refusal is judged at the store's latest version").
///
/// The lagging node does not follow the store, so its copy stays exactly where it was read until
/// a request makes it catch up: the staleness is deterministic, not a race with notifications.
@Suite struct StaleCopyEngineTests {
    /// Node A follows the store; node B recovered the scope at its creation and never follows.
    final class LaggingNode: Sendable {
        let database: String
        let stores: [PostgresStore]
        let writer: ScopeEngine
        let lagging: ScopeEngine
        let scope: String
        let created: Int

        init() async throws {
            let cluster = try await PostgresTestCluster.shared()
            let database = try await cluster.createDatabase()
            var storeConfiguration = PostgresStore.Configuration()
            storeConfiguration.readerConnections = 1
            var configuration = ScopeEngineConfiguration(schema: .demo)
            configuration.conflictRetries = 8
            let stores = try (0..<2).map { _ in
                try PostgresStore(url: cluster.url(database: database), configuration: storeConfiguration)
            }
            self.database = database
            self.stores = stores
            writer = ScopeEngine(configuration: configuration, store: stores[0], logger: Logger(label: "a"))
            lagging = ScopeEngine(configuration: configuration, store: stores[1], logger: Logger(label: "b"))
            #expect(writer.followSharedStore())
            scope = "canvas-stale-\(UUID().uuidString.prefix(8).lowercased())"
            created = try await writer.create(name: scope, rootClassName: "Canvas").version
            try await lagging.recover()
        }

        var writerHandle: ScopeHandle { get throws { try #require(writer.handle(named: scope)) } }
        var laggingHandle: ScopeHandle { get throws { try #require(lagging.handle(named: scope)) } }

        /// Adds a shape on node A; returns it and the version A answered.
        func addShapeOnWriter() async throws -> (shape: UUID, version: Int) {
            let shape = UUID()
            let handle = try writerHandle
            let outcome = await StaleCopyEngineTests.submit(
                EngineFixture.addShape(shape, x: 1, to: handle), on: writer, to: handle)
            return (shape, try #require(outcome.version, "node A refused the shape: \(outcome)"))
        }

        func close() {
            for store in stores { store.close() }
            (try? PostgresTestCluster.shared())?.dropDatabase(database)
        }
    }

    static func submit(
        _ fragments: [JSONValue], on engine: ScopeEngine, to handle: ScopeHandle, ifMatch: VersionCondition? = nil
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            engine.submit(ChangeSet(json: fragments), to: handle, ifMatch: ifMatch) {
                continuation.resume(returning: $0)
            }
        }
    }

    static func patch(
        _ target: UUID, _ document: JSONValue, on engine: ScopeEngine, to handle: ScopeHandle,
        idempotency: IdempotencyKey? = nil
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            engine.submit(MergePatch(target: target, document: document), to: handle, idempotency: idempotency) {
                continuation.resume(returning: $0)
            }
        }
    }

    static func move(_ shape: UUID, to x: Double) -> [JSONValue] {
        [
            [
                "type": "change", "uuid": .string(shape.wireString), "clsName": "Shape",
                "properties": ["x": .number(JSONNumber(x))],
            ]
        ]
    }

    @Test("a change of an object another node just added is accepted on a node whose copy is behind")
    func aChangeOnAStaleCopyIsAccepted() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let (shape, added) = try await nodes.addShapeOnWriter()
        let handle = try nodes.laggingHandle
        #expect(handle.version == nodes.created, "node B must still be behind for this test to mean anything")
        let outcome = await Self.submit(Self.move(shape, to: 7), on: nodes.lagging, to: handle)
        #expect(outcome.version == added + 1, "\(outcome)")
        #expect(try nodes.laggingHandle.committedState.object(shape)?["x"]?.jsonValue == .number(JSONNumber(7.0)))
    }

    @Test("a merge patch of an object another node just added, or naming it, is accepted on a node behind")
    func aMergePatchOnAStaleCopyIsAccepted() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        // The target itself is unknown on the stale copy (objectNotFound).
        let (shape, added) = try await nodes.addShapeOnWriter()
        let first = await Self.patch(shape, ["x": 12], on: nodes.lagging, to: try nodes.laggingHandle)
        #expect(first.version == added + 1, "\(first)")
        // The target is known, but the patch names an object the copy lacks (mergePatchRejected).
        let (other, again) = try await nodes.addShapeOnWriter()
        let root = try nodes.laggingHandle.committedState.rootUUID
        let second = await Self.patch(
            root, ["shapes": [.string(shape.wireString), .string(other.wireString)]], on: nodes.lagging,
            to: try nodes.laggingHandle)
        #expect(second.version == again + 1, "\(second)")
    }

    @Test("If-Match naming the version another node just committed is met on a node whose copy is behind")
    func anIfMatchOfTheStoresVersionIsMet() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let (shape, added) = try await nodes.addShapeOnWriter()
        let handle = try nodes.laggingHandle
        let outcome = await Self.submit(
            Self.move(shape, to: 3), on: nodes.lagging, to: handle, ifMatch: .versions([added]))
        #expect(outcome.version == added + 1, "\(outcome)")
    }

    @Test("a change that is invalid at the store's latest version is still refused, judged there")
    func aGenuinelyInvalidChangeIsRefusedAtTheLatestVersion() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let (_, added) = try await nodes.addShapeOnWriter()
        let handle = try nodes.laggingHandle
        let outcome = await Self.submit(Self.move(UUID(), to: 1), on: nodes.lagging, to: handle)
        guard case .rejected(.changeSetRejected(let replies)) = outcome else {
            Issue.record("expected changeSetRejected, got \(outcome)")
            return
        }
        #expect(replies.first?.error?.kind == .unknownObject)
        // Judged after catching up: the copy is at the store's version now.
        #expect(handle.version == added)
        // If-Match: a version below the store's, or one it never reached, is still 412, naming the
        // store's version.
        for named in [nodes.created, added + 5] {
            let refused = await Self.submit(
                EngineFixture.rename(handle, to: "x"), on: nodes.lagging, to: handle, ifMatch: .versions([named]))
            guard case .rejected(.versionMismatch(let current)) = refused else {
                Issue.record("If-Match \(named): expected versionMismatch, got \(refused)")
                continue
            }
            #expect(current == added)
        }
    }

    @Test("a keyed request accepted after catching up stores its acceptance, not the stale refusal")
    func aKeyedRequestStoresOnlyTheFinalOutcome() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let (shape, added) = try await nodes.addShapeOnWriter()
        let document: JSONValue = ["x": 9]
        let key = IdempotencyKey(
            key: "k-stale", target: "PATCH \(shape.wireString)", body: EngineFixture.body([document]))
        let first = await Self.patch(shape, document, on: nodes.lagging, to: try nodes.laggingHandle, idempotency: key)
        #expect(first.version == added + 1, "\(first)")
        // The same request on node A replays the acceptance.
        let replay = await Self.patch(shape, document, on: nodes.writer, to: try nodes.writerHandle, idempotency: key)
        guard case .replayed(let record) = replay else {
            Issue.record("expected a replay, got \(replay)")
            return
        }
        #expect(record.status == 200)
        #expect(record.version == Int64(added + 1))
    }

    @Test("a subscriber resuming ahead of a node's copy gets the change sets after its point, not a reset back")
    func aResumePointAheadOfTheCopyIsReadFromTheStore() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let first = try await nodes.addShapeOnWriter()
        let second = try await nodes.addShapeOnWriter()
        // The client saw `first` on node A and reconnects to B, whose copy is still at the creation.
        #expect(try nodes.laggingHandle.version == nodes.created)
        let recorder = Recorder()
        nodes.lagging.subscribe(recorder, to: try nodes.laggingHandle, from: .after(first.version))
        #expect(await recorder.waitFor(count: 1, timeout: .seconds(20)))
        #expect(recorder.received == [.init(kind: .changeset, version: second.version)])
        #expect(try nodes.laggingHandle.version == second.version)
    }

    @Test("a subscriber resuming ahead of a node's copy, when the store does not answer, is closed to come back")
    func aResumePointAheadOfAnUnreadableCopyClosesTheStream() async throws {
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        let first = try await nodes.addShapeOnWriter()
        let handle = try nodes.laggingHandle
        // Node B's store stops answering (closed: every read fails at once).
        nodes.stores[1].close()
        let recorder = Recorder()
        nodes.lagging.subscribe(recorder, to: handle, from: .after(first.version))
        #expect(await recorder.waitForEnd(timeout: .seconds(20)))
        #expect(recorder.events.map(\.kind) == [.closing])
        #expect(
            recorder.events.first.map { String(decoding: $0.payload, as: UTF8.self) }
                == #"{"reason":"store-unavailable"}"#)
    }

    @Test("a node that is the store's only writer judges a refusal on its copy, without reading the store")
    func aSingleNodeStoreIsNeverCaughtUpForARefusal() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        #expect(!fixture.engine.mayBeBehind(.changeSetRejected([])))
        #expect(!fixture.engine.mayBeBehind(.versionMismatch(current: 1)))
        let nodes = try await LaggingNode()
        defer { nodes.close() }
        #expect(nodes.lagging.mayBeBehind(.changeSetRejected([])))
        #expect(nodes.lagging.mayBeBehind(.versionMismatch(current: 1)))
        #expect(!nodes.lagging.mayBeBehind(.scopeNotFound(nodes.scope)))
        #expect(!nodes.lagging.mayBeBehind(.idempotencyKeyInFlight("k")))
    }
}
