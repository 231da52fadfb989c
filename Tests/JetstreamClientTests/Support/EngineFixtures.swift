import Foundation
import JetstreamJSON
import JetstreamModel

@testable import JetstreamClient

/// Demo-schema states and fragments for the `SyncEngine` tests, written by hand so the exact
/// shapes are visible (as the JavaScript client's `core.test.mjs` does).
enum EngineFixtures {
    static let schema = Schema.demo
    static let root = uuid(0xC0)

    /// A fixed UUID ending in `n`.
    static func uuid(_ n: Int) -> UUID {
        UUID(uuidString: "00000000-0000-0000-0000-" + String(format: "%012x", n))!
    }

    /// A canvas with `shapes` (UUID, properties given) at `version`.
    static func canvas(version: Int, _ shapes: [(UUID, JSONObject)]) -> ScopeState {
        let fragments =
            [
                SyncFragment(
                    type: .change, uuid: root, clsName: "Canvas",
                    properties: ["name": nil, "shapes": .array(shapes.map { .string($0.0.wireString) })])
            ] + shapes.map { SyncFragment(type: .add, uuid: $0.0, clsName: "Shape", properties: $0.1) }
        do {
            return try ScopeState(importing: fragments, rootUUID: root, version: version, schema: schema)
        } catch {
            fatalError("fixture state: \(error)")
        }
    }

    static func set(_ uuid: UUID, _ properties: JSONObject) -> [SyncFragment] {
        [SyncFragment(type: .change, uuid: uuid, clsName: "Shape", properties: properties)]
    }

    /// A new shape inserted before `before` (nil: at the end), as the typed scope records it.
    static func add(_ uuid: UUID, _ properties: JSONObject = [:], before: UUID? = nil) -> [SyncFragment] {
        [
            SyncFragment(type: .add, uuid: uuid, clsName: "Shape", properties: properties),
            shapes(["insert": [.string(uuid.wireString)], "before": before.map { .string($0.wireString) } ?? nil]),
        ]
    }

    static func remove(_ uuid: UUID) -> [SyncFragment] {
        [shapes(["remove": [.string(uuid.wireString)]])]
    }

    /// A change of the canvas's shapes: operations, or a whole array.
    static func shapes(_ value: JSONValue) -> SyncFragment {
        SyncFragment(type: .change, uuid: root, clsName: "Canvas", properties: ["shapes": value])
    }

    static func list(_ uuids: [UUID]) -> JSONValue {
        .array(uuids.map { .string($0.wireString) })
    }

    /// The shapes of a state's canvas, in order.
    static func order(_ state: ScopeState) -> [UUID] {
        state.root["shapes"]?.referencedUUIDs ?? []
    }

    /// A property of an object of `state` (nil when the object is not there).
    static func value(_ state: ScopeState, _ uuid: UUID, _ key: String) -> Value? {
        state.object(uuid)?[key]
    }

    /// The update's fragments by UUID (empty for `.none`).
    static func fragments(_ update: ViewUpdate) -> [UUID: SyncFragment] {
        guard case .fragments(let fragments) = update else { return [:] }
        return Dictionary(fragments.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Applies `update` to `previous` as the typed scope would (`applySyncFragments`).
    static func applying(_ update: ViewUpdate, to previous: ScopeState) throws -> ScopeState {
        guard case .fragments(let fragments) = update else { return previous }
        switch previous.applying(fragments, schema: schema, limits: .unlimited) {
        case .accepted(let applied): return applied.state
        case .rejected(let replies): throw HarnessError("the update does not apply to the previous view: \(replies)")
        }
    }

    /// The state's objects as full-state fragments (pre-order), to compare states by content.
    static func content(_ state: ScopeState) -> [SyncFragment] {
        state.exportFragments()
    }
}
