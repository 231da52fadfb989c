import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// The echo of the oldest pending set leaves the view as it is without rebuilding it (a replay of
/// a long offline queue): the view after each echo must equal what a full rebuild gives — also
/// when the echo carries the server's normalised form (a whole array for an insert), when a later
/// pending set no longer applies, and when the echo is not the oldest set's.
@Suite("SyncEngine: echoes of the oldest pending set")
struct SyncEngineEchoTests {
    typealias F = EngineFixtures
    static let s1 = F.uuid(1)
    static let s2 = F.uuid(2)

    static func engine() -> SyncEngine {
        SyncEngine(
            state: F.canvas(version: 0, [(s1, ["x": 1]), (s2, ["x": 2])]), schema: F.schema, clientID: "c")
    }

    /// The same engine's view, rebuilt from scratch: its confirmed state and pending sets.
    static func rebuilt(_ engine: SyncEngine) -> [SyncFragment] {
        F.content(
            SyncEngine(
                state: engine.confirmed, schema: F.schema, clientID: "c", sequence: 0, pending: engine.pending
            ).view)
    }

    @Test("a queue confirmed in order: after each echo the view is what a rebuild gives")
    func queueConfirmedInOrder() throws {
        var engine = Self.engine()
        var keys: [String] = []
        var echoes: [[SyncFragment]] = []
        for index in 0..<6 {
            let uuid = F.uuid(100 + index)
            let fragments = F.add(uuid, ["x": .number(JSONNumber(index))])
            guard case .success(let key) = engine.local(fragments) else { throw HarnessError("refused") }
            keys.append(key)
            // The server's normalised form: the whole array after the insert, every property of the add.
            let order = F.order(engine.view)
            echoes.append([
                SyncFragment(
                    type: .add, uuid: uuid, clsName: "Shape",
                    properties: engine.view.object(uuid)?.propertiesJSON ?? [:]),
                F.shapes(F.list(order)),
            ])
        }
        // A set that no longer applies once s2 is gone: hidden, and it must stay so.
        guard case .success = engine.local(F.set(Self.s2, ["x": 50])) else { throw HarnessError("refused") }
        guard
            case .applied = engine.event(
                version: 1, fragments: F.remove(Self.s2), removed: [Self.s2], idempotencyKey: nil)
        else { throw HarnessError("the removal was not applied") }
        #expect(F.content(engine.view) == Self.rebuilt(engine))

        for (index, key) in keys.enumerated() {
            let before = F.content(engine.view)
            var echo = echoes[index]
            // The whole array the server sends is its own: s2 is gone there.
            echo[1] = F.shapes(F.list(F.order(engine.confirmed) + [F.uuid(100 + index)]))
            guard
                case .applied(let update) = engine.event(
                    version: index + 2, fragments: echo, removed: [], idempotencyKey: key)
            else { throw HarnessError("echo \(index) was not applied") }
            #expect(F.fragments(update).isEmpty, "echo \(index) changed the view")
            #expect(F.content(engine.view) == before)
            #expect(F.content(engine.view) == Self.rebuilt(engine), "echo \(index): the view differs from a rebuild")
            #expect(engine.view.version == index + 2)
        }
        #expect(engine.pending.count == 1, "the hidden set is still pending")
    }

    @Test("an echo of a later set than the oldest rebuilds, and agrees")
    func echoOutOfOrder() throws {
        var engine = Self.engine()
        guard case .success = engine.local(F.set(Self.s1, ["x": 10])),
            case .success(let second) = engine.local(F.set(Self.s2, ["x": 20]))
        else { throw HarnessError("refused") }
        guard
            case .applied = engine.event(
                version: 1, fragments: F.set(Self.s2, ["x": 20]), removed: [], idempotencyKey: second)
        else { throw HarnessError("not applied") }
        #expect(F.content(engine.view) == Self.rebuilt(engine))
        #expect(F.value(engine.view, Self.s1, "x") == .float(10) && F.value(engine.view, Self.s2, "x") == .float(20))
    }

    @Test("the oldest pending set hidden (no longer applying): its echo is applied, not skipped")
    func hiddenOldestSet() throws {
        var engine = Self.engine()
        guard case .success(let key) = engine.local(F.set(Self.s2, ["x": 20])) else { throw HarnessError("refused") }
        // A reset without s2 (a schema change, say): the set stays pending, invisible.
        engine.reset(to: F.canvas(version: 3, [(Self.s1, ["x": 1])]))
        #expect(engine.view.object(Self.s2) == nil)
        // The server had applied it (on its own state) and its echo brings s2 back.
        guard
            case .applied = engine.event(
                version: 4, fragments: F.add(Self.s2, ["x": 20]), removed: [], idempotencyKey: key)
        else { throw HarnessError("not applied") }
        #expect(F.value(engine.view, Self.s2, "x") == .float(20), "the echo shows: the view was rebuilt")
        #expect(F.content(engine.view) == Self.rebuilt(engine))
    }

    @Test("the oldest pending entry a method call's stub: the server's set replaces the stub's edits")
    func callStubReplaced() throws {
        var engine = Self.engine()
        let call = PendingMethod(name: "arrange", args: .null)
        guard case .success(let key) = engine.local(F.set(Self.s1, ["x": 999]), method: call) else {
            throw HarnessError("refused")
        }
        #expect(F.value(engine.view, Self.s1, "x") == .float(999))
        guard
            case .applied = engine.event(
                version: 1, fragments: F.set(Self.s1, ["x": 20]), removed: [], idempotencyKey: key)
        else { throw HarnessError("not applied") }
        #expect(F.value(engine.view, Self.s1, "x") == .float(20), "the server's change, not the stub's")
        #expect(engine.pending.isEmpty)
    }
}
