import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

/// The engine carrying out the scope directory's decisions on real handles over a real SQLite
/// store: the actions' effects on writes and subscribers, and `adopt`, which goes through the
/// directory like every other way into the scope table.
@Suite("The engine and its scope directory")
struct ScopeDirectoryEngineTests {
    static func withFixture(_ body: (EngineFixture) async throws -> Void) async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        try await body(fixture)
    }

    @Test("adopt does not host a copy read before the scope's delete, and hosts a later scope's copy")
    func adoptRespectsTheTombstone() async throws {
        try await Self.withFixture { fixture in
            _ = try await fixture.createCanvas()
            let stale = try #require(try fixture.store.recoverScope(named: "canvas-1"))
            try await fixture.engine.delete(name: "canvas-1")
            #expect {
                try fixture.engine.adopt(stale)
            } throws: { error in
                guard case .scopeNotFound("canvas-1") = error as? ScopeError else { return false }
                return true
            }
            #expect(fixture.engine.handle(named: "canvas-1") == nil)

            // Another writer of the store creates the name again: its copy is adopted.
            let created = try await fixture.store.createScope(stale.info.descriptor, snapshot: stale.snapshot)
            let fresh = try #require(try fixture.store.recoverScope(named: "canvas-1"))
            let adopted = try fixture.engine.adopt(fresh)
            #expect(adopted.version == Int(created))
            #expect(fixture.engine.handle(named: "canvas-1") === adopted)
        }
    }

    @Test("an evicted handle takes no writes and its subscribers end with deleted at its version or later")
    func evictionEndsWithDeleted() async throws {
        try await Self.withFixture { fixture in
            let live = try await fixture.createCanvas()
            #expect(await fixture.addShapes(2, to: live) == [1, 2])
            let early = fixture.subscribe(to: live, from: .after(2))
            fixture.engine.apply([.evict(live, deletedAt: 1)])
            #expect(await early.waitForEnd())
            #expect(early.events.map(\.payload) == [ScopeEvent.deleted(name: "canvas-1", version: 2).payload])
            #expect(await fixture.addShapes(1, to: live) == [nil])
        }
    }

    @Test("a retired handle takes no writes and its subscribers end without a final event")
    func retirementEndsQuietly() async throws {
        try await Self.withFixture { fixture in
            let live = try await fixture.createCanvas()
            let recorder = fixture.subscribe(to: live, from: .after(0))
            fixture.engine.apply([.retire(live)])
            #expect(await recorder.waitForEnd())
            #expect(recorder.received.isEmpty)
            #expect(await fixture.addShapes(1, to: live) == [nil])
        }
    }

    @Test("a delete here ends the subscribers with deleted at the store's version and frees the name")
    func aDeleteEndsWithTheStoresVersion() async throws {
        try await Self.withFixture { fixture in
            let live = try await fixture.createCanvas()
            #expect(await fixture.addShapes(1, to: live) == [1])
            let recorder = fixture.subscribe(to: live, from: .after(1))
            try await fixture.engine.delete(name: "canvas-1")
            #expect(await recorder.waitForEnd())
            #expect(recorder.events.map(\.payload) == [ScopeEvent.deleted(name: "canvas-1", version: 1).payload])
            #expect(fixture.engine.directory.withLock { $0.tombstones["canvas-1"] } == .at(1))
            #expect(fixture.engine.handle(named: "canvas-1") == nil)
            #expect(await fixture.addShapes(1, to: live) == [nil])
        }
    }
}
