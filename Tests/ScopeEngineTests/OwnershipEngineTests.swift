import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

/// The schema's write rules in the engine: writers judged by their origin's subject and roles,
/// methods judged as their caller unless they act as the server, and owners kept through the
/// log and snapshots across a restart.
@Suite("Ownership rules in the engine")
struct OwnershipEngineTests {
    static let schema = try! Schema.parse(
        yaml: """
            models:
              Canvas: { shapes: [Shape] }
              Shape:
                rules: { write: owner, delete: owner }
                x: Float
                y: Float
                createdAt: { type: String?, immutable: true }
            scopes:
              "canvas-*": { root: Canvas }
            """)

    static func fixture(directory: URL? = nil) throws -> EngineFixture {
        try EngineFixture(configuration: ScopeEngineConfiguration(schema: schema), directory: directory)
    }

    static func submit(
        _ fragments: [JSONValue], to handle: ScopeHandle, as subject: String?, roles: Set<String> = [],
        on engine: ScopeEngine
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            engine.submit(
                ChangeSet(json: fragments), to: handle, origin: ChangeOrigin(subject: subject, roles: roles)
            ) { continuation.resume(returning: $0) }
        }
    }

    static func call(
        _ method: ScopeMethod, on handle: ScopeHandle, as subject: String?, claims: JSONValue? = nil,
        engine: ScopeEngine
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            engine.call(method, args: .null, claims: claims, on: handle, origin: ChangeOrigin(subject: subject)) {
                continuation.resume(returning: $0)
            }
        }
    }

    static func move(_ shape: UUID, to x: Double) -> JSONValue {
        [
            "type": "change", "uuid": .string(shape.wireString), "clsName": "Shape",
            "properties": ["x": .number(JSONNumber(x))],
        ]
    }

    /// A canvas holding one shape added by `ada`.
    static func canvasWithAdasShape(_ fixture: EngineFixture) async throws -> (ScopeHandle, UUID) {
        let handle = try await fixture.engine.create(
            name: "canvas-1", rootClassName: "Canvas", rootUUID: nil, properties: JSONObject())
        let shape = UUID()
        let added = await submit(
            EngineFixture.addShape(shape, x: 1, to: handle), to: handle, as: "ada", on: fixture.engine)
        #expect(added.version == 1)
        return (handle, shape)
    }

    static func refusalTypes(_ outcome: SubmitOutcome) -> [String] {
        guard case .rejected(.changeSetRejected(let replies)) = outcome else { return ["not refused: \(outcome)"] }
        return replies.compactMap { $0.error?.kind.rawValue }
    }

    @Test("a change set is judged by its origin's subject; the owner's own passes")
    func submissionsAreJudged() async throws {
        let fixture = try Self.fixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let (handle, shape) = try await Self.canvasWithAdasShape(fixture)
        #expect(handle.committedState.object(shape)?.owner == "ada")
        let bobs = await Self.submit([Self.move(shape, to: 5)], to: handle, as: "bob", on: fixture.engine)
        #expect(Self.refusalTypes(bobs) == ["forbidden"])
        #expect(handle.committedState.version == 1, "nothing applied")
        let adas = await Self.submit([Self.move(shape, to: 5)], to: handle, as: "ada", on: fixture.engine)
        #expect(adas.version == 2)
    }

    @Test("a method is judged as its caller unless its outcome acts as the server; it reads the claims")
    func methodsAreJudgedAsTheirCaller() async throws {
        let fixture = try Self.fixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let (handle, shape) = try await Self.canvasWithAdasShape(fixture)
        let seenClaims = Mutex<JSONValue?>(nil)
        let nudge = ScopeMethod("nudge") { call in
            seenClaims.withLock { $0 = call.claims }
            let asServer = call.claims?["roles"]?.array?.contains("mover") ?? false
            return MethodOutcome(fragments: [try SyncFragment(json: Self.move(shape, to: 9))], actsAsServer: asServer)
        }
        let claims: JSONValue = ["sub": "bob", "roles": ["viewer"]]
        let refused = await Self.call(nudge, on: handle, as: "bob", claims: claims, engine: fixture.engine)
        #expect(Self.refusalTypes(refused) == ["forbidden"])
        #expect(seenClaims.withLock { $0 } == claims)
        #expect(handle.committedState.version == 1)

        let mover: JSONValue = ["sub": "bob", "roles": ["mover"]]
        let accepted = await Self.call(nudge, on: handle, as: "bob", claims: mover, engine: fixture.engine)
        #expect(accepted.version == 2)
        #expect(handle.committedState.object(shape)?["x"] == .float(9))
        #expect(handle.committedState.object(shape)?.owner == "ada", "a write does not move ownership")
    }

    @Test("owners survive a restart: replayed from each logged set's subject, and read from a snapshot")
    func ownersSurviveARestart() async throws {
        let first = try Self.fixture()
        defer { first.removeFiles() }
        let (handle, adas) = try await Self.canvasWithAdasShape(first)
        // A second scope whose state is stored as a snapshot, so its restart reads no log.
        let snapshotted = try await first.engine.create(
            name: "canvas-2", rootClassName: "Canvas", rootUUID: nil, properties: JSONObject())
        let bobs = UUID()
        _ = await Self.submit(
            EngineFixture.addShape(bobs, x: 2, to: snapshotted), to: snapshotted, as: "bob", on: first.engine)
        let anonymous = UUID()
        _ = await Self.submit(
            EngineFixture.addShape(anonymous, x: 3, to: snapshotted), to: snapshotted, as: nil, on: first.engine)
        let snapshot = ScopeEncoding.snapshotJSON(state: snapshotted.committedState)
        #expect(String(decoding: snapshot, as: UTF8.self).contains(#""owners":{"\#(bobs.wireString)":"bob"}"#))
        try await first.store.writeSnapshot(scope: "canvas-2", version: 2, snapshot: snapshot)
        _ = handle
        first.close()

        let second = try Self.fixture(directory: first.directory)
        defer { second.close() }
        _ = try await second.engine.recover()
        let replayed = try #require(second.engine.handle(named: "canvas-1"))
        #expect(replayed.committedState.object(adas)?.owner == "ada")
        let fromSnapshot = try #require(second.engine.handle(named: "canvas-2"))
        #expect(fromSnapshot.committedState.object(bobs)?.owner == "bob")
        #expect(fromSnapshot.committedState.object(anonymous)?.owner == nil)
        // And the rules hold after it.
        let refused = await Self.submit([Self.move(adas, to: 7)], to: replayed, as: "bob", on: second.engine)
        #expect(Self.refusalTypes(refused) == ["forbidden"])
    }

    @Test("a restore acts as the server: what it brings back is owned by the subject restoring")
    func restoreActsAsTheServer() async throws {
        let fixture = try Self.fixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let (handle, shape) = try await Self.canvasWithAdasShape(fixture)
        let root = handle.committedState.rootUUID
        let emptied: JSONValue = [
            "type": "change", "uuid": .string(root.wireString), "clsName": "Canvas", "properties": ["shapes": []],
        ]
        #expect(await Self.submit([emptied], to: handle, as: "ada", on: fixture.engine).version == 2)
        let restored = await withCheckedContinuation { continuation in
            fixture.engine.restore(handle, to: 1, origin: ChangeOrigin(subject: "carol")) {
                continuation.resume(returning: $0)
            }
        }
        #expect(restored.version == 3)
        #expect(handle.committedState.object(shape)?.owner == "carol")
    }
}
