import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

/// What the engine hosts when a copy of a scope read from the store (by a shared store's
/// follower) meets a creation, a deletion or a commit made here meanwhile: the interleavings are
/// laid out step by step, each as a follower or a request would reach it. Also the follower's
/// merging of notices, and a write on a closed store.
@Suite("Hosting a scope under concurrent creation, deletion and commits")
struct HostingRaceTests {
    /// Runs `body` with `canvas-1` created and a copy of it as the store holds it now; the
    /// fixture is closed and removed afterwards.
    static func withScopeAndCopy(
        _ body: (EngineFixture, ScopeHandle, RecoveredScope) async throws -> Void
    ) async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        try await body(fixture, handle, try #require(try fixture.store.recoverScope(named: "canvas-1")))
    }

    @Test("a reloaded copy older than the live handle does not replace it (it committed meanwhile)")
    func aReloadBehindTheLiveHandleKeepsIt() async throws {
        try await Self.withScopeAndCopy { fixture, live, copy in
            #expect(await fixture.addShapes(2, to: live) == [1, 2])
            let hosted = fixture.engine.host(
                try fixture.engine.restore(copy), readAt: copy.info.version, replacing: true)
            #expect(hosted === live)
            #expect(fixture.engine.handle(named: "canvas-1") === live)
            #expect(await fixture.addShapes(1, to: live) == [3])
        }
    }

    @Test("a creation finishing after a follower hosted its scope keeps that copy when it is as far")
    func aCreationKeepsTheFollowersCopy() async throws {
        try await Self.withScopeAndCopy { fixture, live, copy in
            #expect(await fixture.addShapes(1, to: live) == [1])
            // The handle the creation made, at the version the store gave it, arrives last.
            let created = try fixture.engine.restore(copy)
            #expect(fixture.engine.hostCreated(created) === live)
            #expect(fixture.engine.handle(named: "canvas-1") === live)
        }
    }

    @Test("a creation finishing after its scope was deleted hosts nothing and takes no writes")
    func aCreationAfterItsDeletionIsNotHosted() async throws {
        try await Self.withScopeAndCopy { fixture, _, copy in
            // A follower hosted the new scope, a DELETE removed it; the creation's own handle comes last.
            try await fixture.engine.delete(name: "canvas-1")
            let created = try fixture.engine.restore(copy)
            let answered = fixture.engine.hostCreated(created)
            #expect(answered === created)
            #expect(fixture.engine.handle(named: "canvas-1") == nil)
            #expect(await fixture.addShapes(1, to: created) == [nil])
        }
    }

    @Test("a creation finishing while a delete of an earlier scope of the name is in flight is hosted")
    func aCreationDuringAnEarlierDeleteIsHosted() async throws {
        try await Self.withScopeAndCopy { fixture, _, copy in
            try await fixture.engine.delete(name: "canvas-1")
            let again = try await fixture.createCanvas()
            #expect(again.version > copy.info.version)
            #expect(fixture.engine.handle(named: "canvas-1") === again)
            // A delete in flight marks the name as being deleted until the store answers; the
            // creation that the store accepted meanwhile is of a later scope and must be hosted.
            #expect(fixture.engine.directory.withLock { $0.deleteBegan("canvas-1") }?.taken === again)
            #expect(fixture.engine.hostCreated(again) === again)
            #expect(fixture.engine.handle(named: "canvas-1") === again)
        }
    }

    @Test("a write on a closed store is rejected, not deadlocked on the scope's lock", .timeLimit(.minutes(1)))
    func aWriteOnAClosedStoreIsRejected() async throws {
        let fixture = try EngineFixture()
        defer { fixture.removeFiles() }
        let live = try await fixture.createCanvas()
        fixture.close()
        let outcome = await fixture.submit(EngineFixture.rename(live, to: "late"), to: live)
        guard case .rejected(.store(.closed)) = outcome else {
            Issue.record("expected a rejection for the closed store, got \(outcome)")
            return
        }
        #expect(live.version == 0)
    }

    @Test("notices merge per scope to the highest version; a creation after a deletion is kept")
    func noticesMerge() {
        var pending = ScopeFollower.Pending()
        pending.record(
            .changed([ScopeVersion(name: "a", version: 3), ScopeVersion(name: "b", version: 0, deleted: true)]))
        pending.record(.changed([ScopeVersion(name: "a", version: 2), ScopeVersion(name: "b", version: 0)]))
        #expect(pending.versions["a"] == ScopeVersion(name: "a", version: 3))
        #expect(pending.versions["b"] == ScopeVersion(name: "b", version: 0))
        pending.record(.changed([ScopeVersion(name: "a", version: 0, deleted: true)]))
        #expect(pending.versions["a"]?.deleted == true)
        #expect(!pending.everything)
        pending.record(.everything)
        #expect(pending.everything)
    }
}
