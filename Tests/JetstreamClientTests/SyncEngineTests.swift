import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// `SyncEngine`, docs/sync-protocol.md's algorithm with no I/O, rule by rule (after the JavaScript client's
/// `core.test.mjs`), then seeded schedules of three engines and a fake server.
@Suite("SyncEngine")
struct SyncEngineTests {
    typealias F = EngineFixtures
    static let s1 = F.uuid(1)
    static let s2 = F.uuid(2)
    static let s3 = F.uuid(3)
    static let a = F.uuid(0xA)
    static let b = F.uuid(0xB)

    /// An engine on a canvas with S1 (x 1) and S2 (x 2) at `version`.
    static func loaded(version: Int = 0, clientID: String = "tab") -> SyncEngine {
        SyncEngine(
            state: F.canvas(version: version, [(s1, ["x": 1]), (s2, ["x": 2])]), schema: F.schema, clientID: clientID)
    }

    static func key(_ result: Result<String, LocalRejection>) -> String? {
        try? result.get()
    }

    /// A local set that must be accepted; its key.
    static func local(_ engine: inout SyncEngine, _ fragments: [SyncFragment]) throws -> String {
        switch engine.local(fragments) {
        case .success(let key): return key
        case .failure(let rejection): throw HarnessError("refused locally: \(rejection.replies)")
        }
    }

    /// The next set to send, which must exist.
    static func send(_ engine: inout SyncEngine) throws -> PendingChangeSet {
        guard let set = engine.nextToSend() else { throw HarnessError("nothing to send") }
        return set
    }

    @Test("L1: a local set is in the view at once, keyed <clientID>:<n> in order; confirmed is untouched")
    func localSetsAreKeyedInOrder() {
        var engine = Self.loaded(version: 3, clientID: "tab-1")
        #expect(Self.key(engine.local(F.set(Self.s1, ["x": 10]))) == "tab-1:1")
        #expect(engine.pending.map(\.status) == [.queued])
        #expect(F.value(engine.view, Self.s1, "x") == .float(10))
        #expect(F.value(engine.confirmed, Self.s1, "x") == .float(1))
        #expect(engine.version == 3 && engine.view.version == 3)
        #expect(Self.key(engine.local(F.add(Self.s3, ["x": 3]))) == "tab-1:2")
        #expect(F.order(engine.view) == [Self.s1, Self.s2, Self.s3])
        #expect(Self.key(engine.local(F.remove(Self.s2))) == "tab-1:3")
        #expect(F.order(engine.view) == [Self.s1, Self.s3])
        #expect(engine.view.object(Self.s2) == nil, "removed from the view by reachability")
        #expect(engine.pending.map(\.key) == ["tab-1:1", "tab-1:2", "tab-1:3"])
    }

    @Test("L1: a set the schema refuses gets one reply per fragment, changes nothing and uses no key")
    func locallyInvalidSetsAreRefused() throws {
        var engine = Self.loaded()
        let view = F.content(engine.view)
        let cases: [([SyncFragment], [FragmentError.Kind?])] = [
            (F.set(Self.s1, ["width": -1]), [.outOfRange]),
            (F.set(Self.s1, ["label": .string(String(repeating: "x", count: 201))]), [.constraintViolation]),
            (F.set(Self.s1, ["kind": "hexagon"]), [.constraintViolation]),
            (F.set(Self.s1, ["x": "10"]), [.typeMismatch]),
            (F.set(F.uuid(99), ["x": 1]), [.unknownObject]),
            (F.set(Self.s1, ["width": -1]) + F.set(Self.s2, ["x": 5]), [.outOfRange, nil]),
        ]
        for (fragments, expected) in cases {
            guard case .failure(let rejection) = engine.local(fragments) else {
                Issue.record("accepted: \(fragments)")
                continue
            }
            #expect(rejection.replies.map { $0.error?.kind } == expected)
        }
        #expect(F.content(engine.view) == view)
        #expect(engine.pending.isEmpty)
        #expect(Self.key(engine.local(F.set(Self.s1, ["x": 5]))) == "tab:1", "refused sets use no sequence number")
    }

    @Test("L2 and R6: one set in flight, in creation order; a retried set goes again with its key")
    func oneInFlightInOrder() throws {
        var engine = Self.loaded()
        _ = engine.local(F.set(Self.s1, ["x": 10]))
        _ = engine.local(F.set(Self.s2, ["x": 20]))
        let first = try Self.send(&engine)
        #expect(first.key == "tab:1")
        #expect(engine.pending[0].status == .inFlight)
        #expect(engine.nextToSend() == nil, "nothing else while one is in flight")
        engine.retry(key: first.key)
        #expect(engine.pending[0].status == .queued)
        let again = try Self.send(&engine)
        #expect(again.key == first.key && again.fragments == first.fragments)
        _ = engine.accepted(key: again.key, version: 1)
        #expect(engine.nextToSend()?.key == "tab:2")
    }

    @Test("R6: an accepted set stays in the view until the stream confirms it, no flicker")
    func acceptedIsKeptUntilConfirmed() throws {
        var engine = Self.loaded()
        let key = try Self.local(&engine, F.set(Self.s1, ["x": 10]))
        _ = engine.nextToSend()
        let view = F.content(engine.view)
        guard case .none = engine.accepted(key: key, version: 1) else {
            Issue.record("accepting changed the view")
            return
        }
        #expect(engine.pending.map(\.status) == [.accepted(version: 1)])
        #expect(F.content(engine.view) == view)
        // The echo (with the key) confirms it: nothing visible changes.
        guard
            case .applied(let update) = engine.event(
                version: 1, fragments: F.set(Self.s1, ["x": 10]), removed: [], idempotencyKey: key)
        else {
            Issue.record("the echo was not applied")
            return
        }
        #expect(F.fragments(update).isEmpty)
        #expect(engine.pending.isEmpty)
        #expect(engine.version == 1)
        #expect(F.value(engine.view, Self.s1, "x") == .float(10))
    }

    @Test("R6: an accepted set leaves once an event reaches its version, also without its key")
    func acceptedLeavesAtItsVersion() throws {
        var engine = Self.loaded()
        let key = try Self.local(&engine, F.set(Self.s1, ["x": 10]))
        _ = engine.nextToSend()
        _ = engine.accepted(key: key, version: 2)
        _ = engine.event(version: 1, fragments: F.set(Self.s2, ["y": 7]), removed: [], idempotencyKey: "other:1")
        #expect(engine.pending.count == 1, "not yet: the confirmed state is at 1")
        #expect(F.value(engine.view, Self.s1, "x") == .float(10))
        #expect(F.value(engine.view, Self.s2, "y") == .float(7))
        _ = engine.event(version: 2, fragments: F.set(Self.s1, ["x": 10]), removed: [], idempotencyKey: nil)
        #expect(engine.pending.isEmpty)
        // An answer that arrives after the stream passed its version drops the set at once.
        let late = try Self.local(&engine, F.set(Self.s2, ["x": 30]))
        _ = engine.nextToSend()
        _ = engine.event(version: 3, fragments: F.set(Self.s2, ["x": 30]), removed: [], idempotencyKey: nil)
        #expect(engine.pending.count == 1)
        _ = engine.accepted(key: late, version: 3)
        #expect(engine.pending.isEmpty)
        #expect(F.value(engine.view, Self.s2, "x") == .float(30))
    }

    @Test("E1: the own echo is recognised by its key when it comes before the POST's answer")
    func ownEchoBeforeTheAnswer() throws {
        var engine = Self.loaded(clientID: "tab-9")
        let key = try Self.local(&engine, F.add(Self.s3, ["x": 3]))
        #expect(key == "tab-9:1")
        _ = engine.nextToSend()
        let view = F.content(engine.view)
        let echo = [
            SyncFragment(type: .add, uuid: Self.s3, clsName: "Shape", properties: ["x": 3]),
            F.shapes(["insert": [.string(Self.s3.wireString)], "before": nil]),
        ]
        guard case .applied(let update) = engine.event(version: 1, fragments: echo, removed: [], idempotencyKey: key)
        else {
            Issue.record("not applied")
            return
        }
        #expect(F.fragments(update).isEmpty, "the view already showed it")
        #expect(engine.pending.isEmpty)
        #expect(engine.nextToSend() == nil, "never sent again")
        #expect(F.content(engine.view) == view)
        #expect(F.content(engine.view) == F.content(engine.confirmed))
        guard case .none = engine.accepted(key: key, version: 1) else {
            Issue.record("the late answer changed something")
            return
        }
    }

    @Test("E1: another client's key does not confirm a local set; the local value stays on top")
    func otherKeysDoNotConfirm() throws {
        var engine = Self.loaded()
        _ = engine.local(F.set(Self.s1, ["x": 10]))
        _ = engine.event(version: 1, fragments: F.set(Self.s1, ["x": 99]), removed: [], idempotencyKey: "other:1")
        #expect(engine.pending.count == 1)
        #expect(F.value(engine.view, Self.s1, "x") == .float(10))
        #expect(F.value(engine.confirmed, Self.s1, "x") == .float(99))
    }

    @Test("E1: a remote event while sets are pending is rebased; the update turns the old view into the new")
    func remoteEventIsRebased() throws {
        var engine = Self.loaded(clientID: "a")
        _ = engine.local(F.set(Self.s1, ["x": 10]))
        _ = engine.local(F.add(Self.a, ["x": 5]))
        let before = engine.view
        // Another client inserted B, moved S2 first and changed S1.y (which no local set touches).
        let remote = [
            SyncFragment(type: .add, uuid: Self.b, clsName: "Shape", properties: ["x": 6]),
            F.shapes(F.list([Self.s2, Self.s1, Self.b])), F.set(Self.s1, ["y": 4])[0],
        ]
        guard case .applied(let update) = engine.event(version: 1, fragments: remote, removed: [], idempotencyKey: nil)
        else {
            Issue.record("not applied")
            return
        }
        #expect(
            F.order(engine.view) == [Self.s2, Self.s1, Self.b, Self.a], "the server's order, then the local insert")
        #expect(F.value(engine.view, Self.s1, "x") == .float(10) && F.value(engine.view, Self.s1, "y") == .float(4))
        #expect(F.value(engine.view, Self.b, "x") == .float(6))
        let fragments = F.fragments(update)
        #expect(Set(fragments.keys) == [Self.b, Self.s1, F.root])
        #expect(fragments[Self.b]?.type == .add)
        #expect(fragments[Self.s1]?.properties.keys == ["y"], "only what differs from the previous view")
        #expect(F.content(try F.applying(update, to: before)) == F.content(engine.view))
        #expect(engine.pending.count == 2)
        // A remote write to a property a pending set writes: the local value stays on top.
        _ = engine.event(version: 2, fragments: F.set(Self.s1, ["x": 77]), removed: [], idempotencyKey: nil)
        #expect(F.value(engine.view, Self.s1, "x") == .float(10))
    }

    @Test("R6: a rejected set leaves the view with an update of what it restores; later sets stay")
    func rejectedSetsRollBack() throws {
        var engine = Self.loaded()
        let resize = try Self.local(&engine, F.set(Self.s1, ["width": 50]))
        let add = try Self.local(&engine, F.add(Self.s3, ["x": 3]))
        _ = engine.nextToSend()
        var before = engine.view
        let rollback = engine.rejected(key: resize)
        #expect(Set(F.fragments(rollback).keys) == [Self.s1], "exactly the restored object")
        #expect(F.fragments(rollback)[Self.s1]?.properties.keys == ["width"])
        #expect(F.content(try F.applying(rollback, to: before)) == F.content(engine.view))
        #expect(engine.pending.map(\.key) == [add])
        #expect(F.value(engine.view, Self.s1, "width") == .float(100))
        #expect(engine.nextToSend()?.key == add, "later sets are still sent")
        before = engine.view
        let second = engine.rejected(key: add)
        #expect(Set(F.fragments(second).keys) == [F.root])
        #expect(engine.view.object(Self.s3) == nil)
        #expect(F.content(try F.applying(second, to: before)) == F.content(engine.view))
        #expect(F.content(engine.view) == F.content(engine.confirmed))
        guard case .none = engine.rejected(key: add) else {
            Issue.record("a set no longer pending changed something")
            return
        }
    }

    @Test("E1: a pending set that no longer applies stays pending and invisible until the server answers")
    func setThatNoLongerAppliesStaysPending() throws {
        var engine = Self.loaded()
        let move = try Self.local(&engine, F.set(Self.s1, ["x": 50]))
        let later = try Self.local(&engine, F.set(Self.s2, ["x": 60]))
        // Another client removed S1.
        guard
            case .applied = engine.event(
                version: 1, fragments: [F.shapes(F.list([Self.s2]))], removed: [Self.s1], idempotencyKey: nil)
        else {
            Issue.record("not applied")
            return
        }
        #expect(engine.view.object(Self.s1) == nil)
        #expect(F.value(engine.view, Self.s2, "x") == .float(60), "the later set still applies")
        #expect(engine.pending.map(\.key) == [move, later])
        #expect(engine.nextToSend()?.key == move)
        guard case .none = engine.rejected(key: move) else {
            Issue.record("rejecting an invisible set changed the view")
            return
        }
        #expect(engine.pending.map(\.key) == [later])
    }

    @Test("R1: an event past version + 1 is a gap, one at or below it is stale; neither changes anything")
    func gapsAndStaleEvents() {
        var engine = Self.loaded(version: 1)
        let view = F.content(engine.view)
        guard
            case .gap = engine.event(version: 3, fragments: F.set(Self.s1, ["x": 9]), removed: [], idempotencyKey: nil)
        else {
            Issue.record("no gap")
            return
        }
        for version in [1, 0] {
            guard
                case .stale = engine.event(
                    version: version, fragments: F.set(Self.s1, ["x": 8]), removed: [], idempotencyKey: nil)
            else {
                Issue.record("not stale: \(version)")
                return
            }
        }
        #expect(engine.version == 1 && F.content(engine.view) == view)
        guard
            case .applied = engine.event(
                version: 2, fragments: F.set(Self.s1, ["x": 7]), removed: [], idempotencyKey: nil)
        else {
            Issue.record("not applied")
            return
        }
        #expect(engine.version == 2 && F.value(engine.view, Self.s1, "x") == .float(7))
    }

    @Test("an event that does not apply to the confirmed state is inconsistent: nothing changes")
    func inconsistentEvent() {
        var engine = Self.loaded(version: 4)
        guard
            case .inconsistent(let replies) = engine.event(
                version: 5, fragments: F.set(F.uuid(77), ["x": 1]), removed: [], idempotencyKey: nil)
        else {
            Issue.record("applied an event that does not apply")
            return
        }
        #expect(replies.first?.error?.kind == .unknownObject)
        #expect(engine.version == 4)
    }

    @Test(
        "R7: reset replaces confirmed, requeues unacknowledged sets, keeps the in-flight one, drops confirmed ones")
    func resetRequeues() throws {
        var engine = Self.loaded(version: 1)
        let done = try Self.local(&engine, F.set(Self.s1, ["x": 10]))
        let ahead = try Self.local(&engine, F.set(Self.s1, ["y": 20]))
        let flying = try Self.local(&engine, F.set(Self.s2, ["x": 30]))
        let queued = try Self.local(&engine, F.add(Self.s3, ["x": 3]))
        _ = engine.nextToSend()
        _ = engine.accepted(key: done, version: 2)
        _ = engine.nextToSend()
        _ = engine.accepted(key: ahead, version: 5)
        #expect(engine.nextToSend()?.key == flying)
        // The reset carries version 3: it includes `done` and a remote label on S2.
        engine.reset(to: F.canvas(version: 3, [(Self.s1, ["x": 10]), (Self.s2, ["x": 2, "label": "remote"])]))
        #expect(engine.version == 3)
        #expect(engine.pending.map(\.key) == [ahead, flying, queued], "accepted at <= 3 dropped")
        #expect(engine.pending.map(\.status) == [.queued, .inFlight, .queued])
        #expect(F.value(engine.view, Self.s1, "x") == .float(10) && F.value(engine.view, Self.s1, "y") == .float(20))
        #expect(F.value(engine.view, Self.s2, "x") == .float(30))
        #expect(F.value(engine.view, Self.s2, "label") == .string("remote"))
        #expect(F.order(engine.view) == [Self.s1, Self.s2, Self.s3])
        #expect(engine.nextToSend() == nil, "still one at a time")
        _ = engine.accepted(key: flying, version: 4)
        #expect(engine.nextToSend()?.key == ahead, "sent again with its original key")
    }

    @Test("R7 under another schema: the engine takes it; a pending set it refuses stays pending, out of the view")
    func resetUnderAnotherSchema() throws {
        var engine = Self.loaded(version: 1)
        let narrow = try Self.local(&engine, F.set(Self.s1, ["width": 10]))
        #expect(F.value(engine.view, Self.s1, "width") == .float(10))
        // The server restarted wanting widths of at least 50.
        let line = "width:  { type: Float, default: 100, min: 0 }"
        #expect(Schema.demoYAML.contains(line))
        let stricter = try Schema.parse(
            yaml: Schema.demoYAML.replacingOccurrences(
                of: line, with: "width:  { type: Float, default: 100, min: 50 }"),
            file: "stricter.yaml")
        let state = try ScopeState(
            importing: F.canvas(version: 2, [(Self.s1, ["x": 1]), (Self.s2, ["x": 2])]).exportFragments(),
            rootUUID: F.root, version: 2, schema: stricter)
        engine.reset(to: state, schema: stricter)
        #expect(engine.schema == stricter)
        #expect(engine.version == 2)
        #expect(engine.pending.map(\.key) == [narrow], "kept for the server to answer")
        #expect(F.value(engine.view, Self.s1, "width") == .float(100), "it no longer applies, so it is not shown")
        guard case .failure = engine.local(F.set(Self.s2, ["width": 20])) else {
            Issue.record("a width of 20 was accepted under the new schema")
            return
        }
    }

    @Test("difference(from:to:among:): adds with every property, changes with what differs, only among the candidates")
    func difference() {
        let old = F.canvas(version: 0, [(Self.s1, ["x": 1]), (Self.s2, ["x": 2])])
        let new = F.canvas(version: 0, [(Self.s2, ["x": 2, "label": "b"]), (Self.s3, ["x": 3])])
        let all: Set<UUID> = [F.root, Self.s1, Self.s2, Self.s3]
        let fragments = SyncEngine.difference(from: old, to: new, among: all)
        let byUUID = Dictionary(fragments.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(fragments.count == 3, "S1 only in old: it leaves by reachability, no fragment")
        #expect(byUUID[Self.s3]?.type == .add)
        #expect(byUUID[Self.s3]?.properties.count == Schema.demo.modelClass(named: "Shape")?.properties.count)
        #expect(byUUID[Self.s2]?.type == .change && byUUID[Self.s2]?.properties.keys == ["label"])
        #expect(byUUID[F.root]?.properties.keys == ["shapes"], "the collection as a whole value")
        #expect(Array(fragments.prefix(1)).map(\.type) == [.add], "adds first")
        // Applied to the old state they give the new one.
        guard case .accepted(let applied) = old.applying(fragments, schema: F.schema, limits: .unlimited) else {
            Issue.record("the difference does not apply")
            return
        }
        #expect(F.content(applied.state) == F.content(new))
        // Only the candidates are compared; equal states give nothing.
        #expect(SyncEngine.difference(from: old, to: new, among: [Self.s2]).map(\.uuid) == [Self.s2])
        #expect(SyncEngine.difference(from: new, to: new, among: all).isEmpty)
    }
}
