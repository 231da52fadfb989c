import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

/// Exact resume at the engine level (no sockets): a subscriber starting at a resume point gets the
/// change sets after it exactly once and in order — from memory or from the store — then live
/// events, or the full state in band when the point cannot be served.
@Suite("Exact resume, reset and drain")
struct ExactResumeTests {
    /// An engine with `configuration` over a fresh store, and a `canvas-1` with `changeSets` shapes.
    private static func scope(
        _ configuration: ScopeEngineConfiguration = ScopeEngineConfiguration(schema: .demo), changeSets: Int
    ) async throws -> (EngineFixture, ScopeHandle) {
        let fixture = try EngineFixture(configuration: configuration)
        let handle = try await fixture.createCanvas()
        let versions = await fixture.addShapes(changeSets, to: handle)
        #expect(versions == (0..<changeSets).map { Optional($0 + 1) })
        return (fixture, handle)
    }

    private static func configuration(
        resumeBufferSize: Int = 256, historyLimit: Int = 10_000
    ) -> ScopeEngineConfiguration {
        var configuration = ScopeEngineConfiguration(schema: .demo)
        configuration.resumeBufferSize = resumeBufferSize
        configuration.historyLimit = historyLimit
        return configuration
    }

    private static func changesets(_ versions: ClosedRange<Int>) -> [Recorder.Received] {
        versions.map { Recorder.Received(kind: .changeset, version: $0) }
    }

    @Test("a resume point the memory buffer holds gets exactly the change sets after it, then live ones")
    func resumeFromBuffer() async throws {
        let (fixture, handle) = try await Self.scope(changeSets: 5)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let recorder = fixture.subscribe(to: handle, from: .after(2))
        #expect(await recorder.waitFor(count: 3))
        #expect(recorder.received == Self.changesets(3...5))

        #expect(await fixture.addShapes(1, to: handle) == [6])
        #expect(await recorder.waitFor(count: 4))
        #expect(recorder.received == Self.changesets(3...6))
        #expect(!recorder.ended)
        // The catch-up carries the same bytes history returns.
        let history = try JSONParser.parse(try await fixture.engine.history(of: handle, since: 2, limit: 3))
        let payloads = try recorder.events.map { try JSONParser.parse($0.payload) }
        #expect(history["changesets"]?.array == Array(payloads.prefix(3)))
    }

    @Test("a resume point older than the memory buffer is served from the store, then live")
    func resumeFromStore() async throws {
        let (fixture, handle) = try await Self.scope(Self.configuration(resumeBufferSize: 2), changeSets: 10)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        #expect(handle.runtime.withLock { $0.recent.firstVersion } == 9)
        let recorder = fixture.subscribe(to: handle, from: .after(3))
        #expect(await recorder.waitFor(count: 7))
        #expect(recorder.received == Self.changesets(4...10))

        #expect(await fixture.addShapes(1, to: handle) == [11])
        #expect(await recorder.waitFor(count: 8))
        #expect(recorder.received == Self.changesets(4...11))
        #expect(!recorder.ended)
    }

    @Test("resuming across the store/buffer boundary while writes continue loses and doubles nothing")
    func resumeWhileWriting() async throws {
        let (fixture, handle) = try await Self.scope(Self.configuration(resumeBufferSize: 4), changeSets: 20)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let writer = Task { await fixture.addShapes(30, to: handle) }
        // Subscribe once the writer is under way, so the store read and the writes overlap.
        #expect(await waitUntil { handle.version >= 21 })
        let recorder = fixture.subscribe(to: handle, from: .after(1))
        let written = await writer.value
        #expect(written == (21...50).map { Optional($0) })
        #expect(await recorder.waitFor(count: 49))
        #expect(recorder.received == Self.changesets(2...50))
        // No event arrives beyond what was written.
        try await Task.sleep(for: .milliseconds(50))
        #expect(recorder.events.count == 49)
    }

    @Test("a resume point older than the retained history gets a reset with the full state")
    func tooOldResets() async throws {
        let (fixture, handle) = try await Self.scope(Self.configuration(historyLimit: 3), changeSets: 10)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        #expect(handle.runtime.withLock { $0.oldestResumable } == 7)
        let recorder = fixture.subscribe(to: handle, from: .after(1))
        #expect(await recorder.waitFor(count: 1))
        let first = try #require(recorder.events.first)
        #expect(first.kind == .reset)
        #expect(first.version == 10)
        let state = try JSONParser.parse(first.payload)
        #expect(state["version"] == .number(JSONNumber(10)))
        #expect(state["name"] == .string("canvas-1"))
        #expect(state["fragments"]?.array?.count == 11)
        #expect(first.payload == handle.encodedState().json)

        // Live change sets follow the reset.
        #expect(await fixture.addShapes(1, to: handle) == [11])
        #expect(await recorder.waitFor(count: 2))
        #expect(recorder.received == [.init(kind: .reset, version: 10), .init(kind: .changeset, version: 11)])
    }

    @Test("a resume point ahead of the scope or naming no version gets a reset; none gets a snapshot")
    func aheadUnknownAndFresh() async throws {
        let (fixture, handle) = try await Self.scope(changeSets: 3)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let ahead = fixture.subscribe(to: handle, from: .after(99))
        let unknown = fixture.subscribe(to: handle, from: ResumePoint(lastEventID: "abc"))
        let fresh = fixture.subscribe(to: handle, from: ResumePoint(lastEventID: nil))
        let current = fixture.subscribe(to: handle, from: .after(3))
        #expect(ResumePoint(lastEventID: "abc") == .unknown)
        #expect(ahead.received == [.init(kind: .reset, version: 3)])
        #expect(unknown.received == [.init(kind: .reset, version: 3)])
        #expect(fresh.received == [.init(kind: .snapshot, version: 3)])
        #expect(current.received.isEmpty)
        for recorder in [ahead, unknown, fresh] {
            let state = try JSONParser.parse(try #require(recorder.events.first).payload)
            #expect(state["version"] == .number(JSONNumber(3)))
        }
        #expect(handle.subscriberCount == 4)

        #expect(await fixture.addShapes(1, to: handle) == [4])
        for recorder in [ahead, unknown, fresh, current] {
            #expect(await recorder.waitFor(count: recorder === current ? 1 : 2))
            #expect(recorder.received.last == .init(kind: .changeset, version: 4))
        }
    }

    @Test("deleting a scope ends its subscribers; a resume point of the old incarnation gets a reset")
    func deleteAndRecreate() async throws {
        let (fixture, handle) = try await Self.scope(changeSets: 2)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let recorder = fixture.subscribe(to: handle, from: .after(0))
        #expect(recorder.received == Self.changesets(1...2))
        try await fixture.engine.delete(name: "canvas-1")
        #expect(await recorder.waitForEnd())
        #expect(recorder.received == Self.changesets(1...2) + [.init(kind: .deleted, version: nil)])
        let deleted = try JSONParser.parse(try #require(recorder.events.last).payload)
        #expect(deleted["name"] == .string("canvas-1"))
        #expect(deleted["version"] == .number(JSONNumber(2)))
        #expect(handle.subscriberCount == 0)

        // The old handle takes no new subscriber: it hears `deleted` at once and ends (on a stream
        // of many scopes a silent end would leave that scope looking live to its client).
        let late = fixture.subscribe(to: handle, from: .after(2))
        #expect(late.ended)
        #expect(late.received == [.init(kind: .deleted, version: nil)])
        #expect(try JSONParser.parse(try #require(late.events.last).payload)["version"] == .number(JSONNumber(2)))

        // The new incarnation continues after the old one's last version.
        let again = try await fixture.createCanvas()
        #expect(again.version == 3)
        #expect(again.runtime.withLock { $0.oldestResumable } == 3)
        #expect(await fixture.addShapes(2, to: again) == [4, 5])
        let resumed = fixture.subscribe(to: again, from: .after(2))
        #expect(await resumed.waitFor(count: 1))
        #expect(resumed.received == [.init(kind: .reset, version: 5)])
        // The old subscriber saw nothing of the new incarnation.
        #expect(recorder.events.count == 3)
        // The new incarnation's own first version is a valid resume point.
        let fromCreation = fixture.subscribe(to: again, from: .after(3))
        #expect(fromCreation.received == Self.changesets(4...5))
    }

    @Test("catch-up comes strictly before live events while many writers submit concurrently")
    func catchUpBeforeLive() async throws {
        let (fixture, handle) = try await Self.scope(Self.configuration(resumeBufferSize: 8), changeSets: 20)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let writers = Task {
            await withTaskGroup(of: Int?.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        await fixture.submit(EngineFixture.rename(handle, to: "n\(index)"), to: handle).version
                    }
                }
                var versions: [Int] = []
                for await version in group { if let version { versions.append(version) } }
                return versions
            }
        }
        let early = fixture.subscribe(to: handle, from: .after(0))
        #expect(await waitUntil { handle.version >= 40 })
        let middle = fixture.subscribe(to: handle, from: .after(10))
        let written = await writers.value
        #expect(written.sorted() == Array(21...120))
        #expect(await early.waitFor(count: 120))
        #expect(await middle.waitFor(count: 110))
        #expect(early.changesetVersions == Array(1...120))
        #expect(middle.changesetVersions == Array(11...120))
        #expect(early.events.allSatisfy { $0.kind == .changeset })
        #expect(middle.events.allSatisfy { $0.kind == .changeset })
    }

    @Test("draining sends closing to every subscriber and ends it; a later subscriber gets closing at once")
    func drain() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let one = try await fixture.createCanvas("canvas-1")
        let two = try await fixture.createCanvas("canvas-2")
        let first = fixture.subscribe(to: one, from: .fresh)
        let second = fixture.subscribe(to: two, from: .after(0))
        #expect(!fixture.engine.isDraining)
        #expect(await fixture.engine.readinessProblem() == nil)

        #expect(fixture.engine.beginDrain() == 2)
        #expect(fixture.engine.isDraining)
        #expect(await fixture.engine.readinessProblem() != nil)
        #expect(first.received == [.init(kind: .snapshot, version: 0), .init(kind: .closing, version: nil)])
        #expect(second.received == [.init(kind: .closing, version: nil)])
        #expect(first.ended)
        #expect(second.ended)
        #expect(one.subscriberCount == 0)
        #expect(two.subscriberCount == 0)

        let late = fixture.subscribe(to: one, from: .after(0))
        #expect(late.received == [.init(kind: .closing, version: nil)])
        #expect(late.ended)
        #expect(one.subscriberCount == 0)
        #expect(fixture.engine.beginDrain() == 0)
    }

    @Test("a subscriber whose catch-up is read from the store while the engine starts draining still ends")
    func drainDuringStoreCatchUp() async throws {
        let (fixture, handle) = try await Self.scope(Self.configuration(resumeBufferSize: 1), changeSets: 5)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let recorder = fixture.subscribe(to: handle, from: .after(1))
        fixture.engine.beginDrain()
        // Wait for the store read to be joined (or the subscription to end).
        #expect(await waitUntil { recorder.events.count >= 4 || recorder.ended })
        #expect(await recorder.waitForEnd(timeout: .seconds(5)))
        #expect(recorder.received.last == .init(kind: .closing, version: nil))
        #expect(handle.subscriberCount == 0)
    }
}

@Suite("The resume buffer and the resume planner")
struct ResumePlanningTests {
    private static func event(_ version: Int?) -> ScopeEvent {
        ScopeEvent(kind: .changeset, version: version, payload: Array("{\"version\":\(version ?? -1)}".utf8))
    }

    private static func ring(capacity: Int, _ versions: some Sequence<Int>) -> RecentChangeSets {
        var recent = RecentChangeSets(capacity: capacity)
        for version in versions { recent.append(event(version)) }
        return recent
    }

    private static func versions(_ events: [ScopeEvent]?) -> [Int]? {
        events?.map { $0.version ?? -1 }
    }

    private static func records(_ versions: some Sequence<Int>) -> [ChangeRecord] {
        versions.map { ChangeRecord(version: Int64($0), payload: []) }
    }

    @Test("the ring keeps the newest versions when it wraps and finds any held version")
    func ringWraps() {
        let recent = Self.ring(capacity: 3, 1...5)
        #expect(recent.capacity == 3)
        #expect(recent.count == 3)
        #expect(recent.firstVersion == 3)
        #expect(recent.lastVersion == 5)
        #expect(Self.versions(recent.events(after: 2)) == [3, 4, 5])
        #expect(Self.versions(recent.events(after: 3)) == [4, 5])
        #expect(Self.versions(recent.events(after: 4)) == [5])
        #expect(Self.versions(recent.events(after: 5)) == [])
        #expect(Self.versions(recent.events(after: 2, limit: 2)) == [3, 4])
        #expect(Self.versions(recent.events(after: 2, limit: 0)) == [])
        #expect(recent.holdsAll(after: 2))
        #expect(!recent.holdsAll(after: 1))

        // Wrapped many times over: still the last three, oldest first.
        let long = Self.ring(capacity: 3, 1...100)
        #expect(Self.versions(long.events(after: 97)) == [98, 99, 100])
        #expect(long.firstVersion == 98)
    }

    @Test("versions the ring no longer holds are nil, not a partial answer")
    func notHeld() {
        let recent = Self.ring(capacity: 3, 1...5)
        #expect(recent.events(after: 1) == nil)
        #expect(recent.events(after: 0) == nil)
        #expect(RecentChangeSets(capacity: 3).events(after: 0) == nil)
        #expect(!RecentChangeSets(capacity: 3).holdsAll(after: 0))
        // Partly filled, not wrapped.
        let partial = Self.ring(capacity: 8, 1...3)
        #expect(Self.versions(partial.events(after: 0)) == [1, 2, 3])
        #expect(partial.firstVersion == 1)
        #expect(partial.lastVersion == 3)
    }

    @Test("a version that does not follow the newest one restarts the ring")
    func gapRestarts() {
        var recent = Self.ring(capacity: 4, 1...3)
        recent.append(Self.event(7))
        #expect(recent.count == 1)
        #expect(recent.firstVersion == 7)
        #expect(recent.lastVersion == 7)
        #expect(recent.events(after: 2) == nil)
        #expect(Self.versions(recent.events(after: 6)) == [7])
        recent.append(Self.event(8))
        #expect(Self.versions(recent.events(after: 6)) == [7, 8])
        // An event without a version (deleted, closing) is not kept.
        recent.append(Self.event(nil))
        #expect(recent.count == 2)
        recent.removeAll()
        #expect(recent.isEmpty)
        #expect(recent.firstVersion == nil)
    }

    @Test("a ring of capacity 0 holds nothing")
    func capacityZero() {
        for capacity in [0, -1] {
            let recent = Self.ring(capacity: capacity, 1...3)
            #expect(recent.capacity == 0)
            #expect(recent.isEmpty)
            #expect(recent.firstVersion == nil)
            #expect(recent.lastVersion == nil)
            #expect(recent.events(after: 0) == nil)
            #expect(recent.events(after: 3) == nil)
            #expect(!recent.holdsAll(after: 2))
        }
    }

    @Test("a Last-Event-ID parses to a resume point")
    func resumePoints() {
        #expect(ResumePoint(lastEventID: nil) == .fresh)
        #expect(ResumePoint(lastEventID: "") == .fresh)
        #expect(ResumePoint(lastEventID: " \t") == .fresh)
        #expect(ResumePoint(lastEventID: "42") == .after(42))
        #expect(ResumePoint(lastEventID: " 42\t") == .after(42))
        #expect(ResumePoint(lastEventID: "0") == .after(0))
        #expect(ResumePoint(lastEventID: "-1") == .unknown)
        #expect(ResumePoint(lastEventID: "abc") == .unknown)
        #expect(ResumePoint(lastEventID: "4 2x") == .unknown)
    }

    @Test("the plan: snapshot, live, buffered, store read or reset")
    func plan() {
        let recent = Self.ring(capacity: 4, 7...10)
        func plan(_ point: ResumePoint, oldest: Int = 2) -> ScopeResume.Plan {
            ScopeResume.plan(point, committed: 10, oldestResumable: oldest, recent: recent)
        }
        #expect(plan(.fresh) == .state(.snapshot))
        #expect(plan(.after(10)) == .live)
        #expect(plan(.after(10), oldest: 10) == .live)
        #expect(plan(.after(9)) == .buffered(versions: 10...10))
        #expect(plan(.after(6)) == .buffered(versions: 7...10))
        #expect(plan(.after(5)) == .readStore(after: 5))
        #expect(plan(.after(2)) == .readStore(after: 2))
        #expect(plan(.after(1)) == .state(.reset))
        #expect(plan(.after(6), oldest: 7) == .state(.reset))
        #expect(plan(.after(11)) == .state(.reset))
        #expect(plan(.unknown) == .state(.reset))
        let empty = RecentChangeSets(capacity: 4)
        #expect(ScopeResume.plan(.after(3), committed: 5, oldestResumable: 0, recent: empty) == .readStore(after: 3))
        #expect(ScopeResume.plan(.after(5), committed: 5, oldestResumable: 0, recent: empty) == .live)
    }

    @Test("the join: records then the buffer, read again when the buffer moved on, reset when it cannot be exact")
    func join() {
        let recent = Self.ring(capacity: 4, 7...10)
        func join(_ versions: [Int], after: Int = 2, committed: Int = 10, attempts: Int = 3) -> ScopeResume.Join {
            ScopeResume.join(
                records: Self.records(versions), after: after, committed: committed, recent: recent,
                attemptsLeft: attempts)
        }
        // Everything read: no buffered tail.
        #expect(join(Array(3...10)) == .records(tail: nil))
        // The store read reaches into the buffer: the buffer supplies the rest.
        #expect(join(Array(3...6)) == .records(tail: 7...10))
        #expect(join(Array(3...8)) == .records(tail: 9...10))
        // Nothing read but the buffer follows on at once.
        #expect(join([], after: 6) == .records(tail: 7...10))
        #expect(join([], after: 10) == .records(tail: nil))
        // The buffer moved past the read: read again while attempts are left, else reset.
        #expect(join(Array(3...4)) == .readAgain)
        #expect(join(Array(3...4), attempts: 2) == .readAgain)
        #expect(join(Array(3...4), attempts: 1) == .reset)
        #expect(join([], after: 2) == .readAgain)
        // A gap, a wrong start or a duplicate cannot be served exactly.
        #expect(join([3, 4, 6, 7, 8, 9, 10]) == .reset)
        #expect(join(Array(4...10)) == .reset)
        #expect(join([3, 3, 4, 5, 6]) == .reset)
    }
}
