import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// Events read and applied off the observers' actor (``PreparedChangeSet``): the engine takes the
/// prepared state when it follows its own confirmed state under its own schema, and applies the
/// event itself otherwise — a stale base, another schema, nothing prepared.
@Suite("PreparedChangeSet: events prepared off the observers' actor")
struct PreparedChangeSetTests {
    typealias F = EngineFixtures
    static let s1 = F.uuid(1)
    static let s2 = F.uuid(2)

    static func engine(version: Int = 4) -> SyncEngine {
        SyncEngine(
            state: F.canvas(version: version, [(s1, ["x": 1]), (s2, ["x": 2])]), schema: F.schema, clientID: "c")
    }

    static func event(version: Int, _ fragments: [SyncFragment], key: String? = nil) throws -> PreparedChangeSet {
        var json: JSONObject = [
            "version": .number(JSONNumber(version)), "fragments": .array(fragments.map(\.jsonValue)),
        ]
        if let key { json["idempotencyKey"] = .string(key) }
        return try #require(PreparedChangeSet(json: .object(json)))
    }

    @Test("read from the payload: version, fragments, removed, key; nil for what is not a change set")
    func parsing() throws {
        let prepared = try Self.event(version: 5, F.set(Self.s1, ["x": 10]), key: "k:1")
        #expect(prepared.version == 5 && prepared.fragments.count == 1 && prepared.idempotencyKey == "k:1")
        #expect(prepared.validated == nil)
        #expect(PreparedChangeSet(json: ["version": 5]) == nil)
        #expect(PreparedChangeSet(json: ["version": 5, "fragments": [["type": "nonsense"]]]) == nil)
    }

    @Test("validated against the engine's own base: the engine takes the prepared state as it is")
    func takesThePreparedState() throws {
        var engine = Self.engine()
        var prepared = try Self.event(version: 5, F.set(Self.s1, ["x": 10]))
        // A base that differs from the engine's confirmed state in one value, at the same version
        // and schema generation: the state taken shows it, so it was not computed again here.
        let marked = ConfirmedBase(
            state: F.canvas(version: 4, [(Self.s1, ["x": 1]), (Self.s2, ["x": 99])]), schema: F.schema,
            schemaGeneration: engine.schemaGeneration)
        prepared.validate(against: marked)
        guard case .applied(.fragments(let fragments)) = engine.event(prepared) else {
            Issue.record("not applied")
            return
        }
        #expect(fragments.map(\.uuid) == [Self.s1])
        #expect(engine.version == 5)
        #expect(F.value(engine.confirmed, Self.s1, "x") == .float(10))
        #expect(F.value(engine.confirmed, Self.s2, "x") == .float(99), "the prepared state, taken as it is")
    }

    @Test("a refusal prepared off the actor is a disagreement (R2)")
    func preparedRefusal() throws {
        var engine = Self.engine()
        var prepared = try Self.event(version: 5, F.set(Self.s1, ["width": -5]))
        prepared.validate(against: engine.confirmedBase)
        guard case .inconsistent(let replies) = engine.event(prepared) else {
            Issue.record("not refused")
            return
        }
        #expect(replies.count == 1 && engine.version == 4)
    }

    @Test("prepared on a stale base, under an earlier schema, or not at all: applied by the engine itself")
    func appliedHereOtherwise() throws {
        let marked = ConfirmedBase(
            state: F.canvas(version: 4, [(Self.s1, ["x": 1]), (Self.s2, ["x": 99])]), schema: F.schema,
            schemaGeneration: 0)

        // Under an earlier schema generation: the engine's own state is used.
        var renewed = Self.engine()
        renewed.reset(to: F.canvas(version: 4, [(Self.s1, ["x": 1]), (Self.s2, ["x": 2])]), schema: F.schema)
        #expect(renewed.schemaGeneration == 1)
        var prepared = try Self.event(version: 5, F.set(Self.s1, ["x": 10]))
        prepared.validate(against: marked)
        _ = renewed.event(prepared)
        #expect(renewed.version == 5 && F.value(renewed.confirmed, Self.s2, "x") == .float(2))

        // A base one version behind the event's: nothing is prepared.
        var stale = try Self.event(version: 6, F.set(Self.s1, ["x": 10]))
        stale.validate(against: marked)
        #expect(stale.validated == nil)
        var engine = Self.engine(version: 5)
        _ = engine.event(stale)
        #expect(engine.version == 6 && F.value(engine.confirmed, Self.s1, "x") == .float(10))

        // Stale and ahead events keep their outcomes.
        var behind = Self.engine(version: 6)
        guard case .stale = behind.event(try Self.event(version: 6, F.set(Self.s1, ["x": 3]))) else {
            Issue.record("not stale")
            return
        }
        guard case .gap = behind.event(try Self.event(version: 8, F.set(Self.s1, ["x": 3]))) else {
            Issue.record("not a gap")
            return
        }
    }
}
