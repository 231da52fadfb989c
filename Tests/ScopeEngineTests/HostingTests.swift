import Foundation
import JetstreamModel
import Testing

@testable import ScopeEngine
@testable import Store

/// Hosting a scope loaded from the store while it is live (`adopt`), and leaving a scope's stream
/// (`unsubscribe`).
@Suite("Adopting a stored scope and unsubscribing")
struct HostingTests {
    @Test("adopt replaces the live scope with the stored one; the old handle's subscribers end")
    func adoptReplacesTheLiveScope() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let old = try await fixture.createCanvas()
        #expect(await fixture.addShapes(3, to: old) == [1, 2, 3])
        let recorder = fixture.subscribe(to: old, from: .after(3))

        var stored: [RecoveredScope] = []
        try fixture.store.recover { stored.append($0) }
        let scope = try #require(stored.first { $0.info.name == "canvas-1" })
        let adopted = try fixture.engine.adopt(scope)

        #expect(adopted !== old)
        #expect(fixture.engine.handle(named: "canvas-1") === adopted)
        #expect(adopted.version == 3)
        #expect(adopted.encodedState().json == old.encodedState().json)
        #expect(await recorder.waitForEnd())
        // The replaced handle takes no more writes; the adopted one goes on from version 3.
        #expect(await fixture.addShapes(1, to: old) == [nil])
        #expect(await fixture.addShapes(1, to: adopted) == [4])
        // Its resume buffer came from the log: a resume point inside it is served exactly.
        let resumed = fixture.subscribe(to: adopted, from: .after(1))
        #expect(await resumed.waitFor(count: 3))
        #expect(resumed.received.map(\.version) == [2, 3, 4])
    }

    @Test("a stored scope that does not load is refused with the scope and version named")
    func adoptRefusesABrokenSnapshot() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let broken = RecoveredScope(
            info: ScopeInfo(
                descriptor: ScopeDescriptor(name: "canvas-9", rootClass: "Canvas", rootUUID: UUID().wireString),
                version: 0, lowestRetainedVersion: nil),
            snapshotVersion: 0, snapshot: Array("not json".utf8), tail: [])
        #expect {
            try fixture.engine.adopt(broken)
        } throws: { error in
            guard let error = error as? RecoveryError else { return false }
            return error.scope == "canvas-9" && error.version == 0 && error.message.contains("not JSON")
        }
        #expect(fixture.engine.handle(named: "canvas-9") == nil)
    }

    @Test("a delete the store refuses leaves the scope live: reads, writes and subscribers go on")
    func failedDeleteKeepsTheScope() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(await fixture.addShapes(1, to: handle) == [1])
        let recorder = fixture.subscribe(to: handle, from: .after(1))
        let connection = try SQLiteConnection(path: fixture.storePath)
        try connection.execute(
            """
            CREATE TRIGGER refuse_delete BEFORE UPDATE OF deleted ON scopes WHEN NEW.deleted = 1
            BEGIN SELECT RAISE(ABORT, 'injected failure'); END
            """)
        await #expect(throws: ScopeError.self) { try await fixture.engine.delete(name: "canvas-1") }
        #expect(try fixture.engine.existingHandle("canvas-1") === handle)
        #expect(await fixture.submit(EngineFixture.addShape(UUID(), x: 2, to: handle), to: handle).version == 2)
        #expect(await recorder.waitFor(count: 1))
        #expect(!recorder.ended)

        try connection.execute("DROP TRIGGER refuse_delete")
        try await fixture.engine.delete(name: "canvas-1")
        #expect(throws: ScopeError.self) { try fixture.engine.existingHandle("canvas-1") }
        #expect(await recorder.waitForEnd())
    }

    @Test("unsubscribe ends the subscriber and it gets no later events")
    func unsubscribeEnds() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let leaving = fixture.subscribe(to: handle, from: .after(0))
        let staying = fixture.subscribe(to: handle, from: .after(0))
        fixture.engine.unsubscribe(leaving, from: handle)
        #expect(leaving.ended)
        #expect(handle.subscriberCount == 1)
        #expect(await fixture.addShapes(1, to: handle) == [1])
        #expect(await staying.waitFor(count: 1))
        #expect(leaving.received.isEmpty)
    }
}
