import Foundation
import JetstreamModel
import Testing

/// The schema the tests run against: the demo's canvas (``Schema/demo``) with children, a generic
/// tree, the iOS TestModel and the server's Person, so the original's scenarios read the same here.
enum Fixtures {
    /// What the tests add to the demo schema.
    static let yaml = """
        models:
          Canvas:
            children: [Node]
          Node:
            name: String?
            children: [Node]
            partner: Node?
          TestModel:
            string: String?
            integer: Int
            uint: UInt
            float32: Float
            uint8: UInt8
            int8: Int8
            uint16: UInt16
            int16: Int16
            uint32: UInt32
            int32: Int32
            uint64: UInt64
            int64: Int64
            double64: Double
            boolean: Bool
            date: Date?
            color: Color?
            testType: { enum: [0, 1, 2] }
            array: [TestModel]
            array2: [TestModel]
            anotherArray: [AnotherTestModel]
            childModel: TestModel?
            childModel2: TestModel?
            tags: { type: [String], maxCount: 3 }
            code: { type: String?, pattern: "[A-Z]{3}" }
            scores: { type: "[Double]", min: 0 }
          AnotherTestModel:
            anotherString: String?
            anotherInteger: Int
          Person:
            name: String?
            age: Int
            nicknames: [String]
            partner: Person?
            children: [Person]
            currentDriver: Person?
            lastThreeDrivers: [Person]
          Island:
            name: String?
        scopes:
          "test-*": { root: TestModel }
          "people-*": { root: Person }
        """

    static let schema: Schema = try! Schema.demo(adding: yaml, file: "fixtures.yaml")

    static func modelClass(_ name: String) -> ModelClass { schema.modelClass(named: name)! }

    /// A readable, deterministic UUID: `uuid(7)` is 00000000-0000-0000-0000-000000000007.
    static func uuid(_ number: Int) -> UUID {
        UUID(wireString: String(format: "00000000-0000-0000-0000-%012x", number))!
    }

    static func add(_ uuid: UUID, _ clsName: String, _ properties: JSONObject = JSONObject()) -> SyncFragment {
        SyncFragment(type: .add, uuid: uuid, clsName: clsName, properties: properties)
    }

    static func change(_ uuid: UUID, _ clsName: String, _ properties: JSONObject) -> SyncFragment {
        SyncFragment(type: .change, uuid: uuid, clsName: clsName, properties: properties)
    }

    static func ref(_ uuid: UUID) -> JSONValue { .string(uuid.wireString) }

    static func refs(_ uuids: UUID...) -> JSONValue { .array(uuids.map { .string($0.wireString) }) }

    /// A canvas with shapes s1…sN (uuids 11, 12, …) at version 1.
    static func canvas(shapes count: Int) throws -> (state: ScopeState, root: UUID, shapes: [UUID]) {
        let root = uuid(1)
        let shapes = (0..<count).map { uuid(11 + $0) }
        var fragments = shapes.map { add($0, "Shape", ["x": 1, "y": 2]) }
        fragments.append(change(root, "Canvas", ["shapes": .array(shapes.map(ref))]))
        let state = ScopeState(rootUUID: root, rootClass: modelClass("Canvas"))
        return (try accept(state, fragments), root, shapes)
    }

    /// Applies fragments that must be accepted and returns the new state.
    static func accept(_ state: ScopeState, _ fragments: [SyncFragment]) throws -> ScopeState {
        let outcome = state.applying(fragments, schema: schema)
        let applied = try #require(outcome.applied, "expected acceptance, got \(outcome.replies)")
        return applied.state
    }

    /// The error kinds of a rejected set (nil for `{}`), or nil when it was accepted.
    static func rejectionKinds(_ outcome: ChangeSetOutcome) -> [FragmentError.Kind?]? {
        guard case .rejected(let replies) = outcome else { return nil }
        return replies.map { $0.error?.kind }
    }
}
