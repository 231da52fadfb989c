import Foundation
import JetstreamModel
import Testing

/// A schema with a collection of every element kind, for the collection-operation tests: `Board`
/// (the root) holds `[Item]` (an Item has `tags: [String]`), `[Other]`, a `[Item]` with `maxCount: 3`, and primitive collections
/// of strings (`words` with `maxLength: 5`, `notes` without), integers, floats, doubles, booleans, string and integer enums, dates and colours.
enum OperationFixtures {
    static let schema: Schema = {
        let board = ModelClass(
            name: "Board",
            properties: [
                PropertyDefinition(name: "name", type: .string, isNullable: true),
                PropertyDefinition(name: "owner", type: .reference("Item"), isNullable: true),
                PropertyDefinition(name: "items", type: .collection(.reference("Item"))),
                PropertyDefinition(
                    name: "pinned", type: .collection(.reference("Item")),
                    constraints: PropertyConstraints(maxCount: 3)),
                PropertyDefinition(name: "others", type: .collection(.reference("Other"))),
                PropertyDefinition(
                    name: "words", type: .collection(.string), constraints: PropertyConstraints(maxLength: 5)),
                PropertyDefinition(name: "notes", type: .collection(.string)),
                PropertyDefinition(name: "counts", type: .collection(.int8)),
                PropertyDefinition(name: "sizes", type: .collection(.uint32)),
                PropertyDefinition(
                    name: "ratios", type: .collection(.float), constraints: PropertyConstraints(min: 0)),
                PropertyDefinition(name: "weights", type: .collection(.double)),
                PropertyDefinition(name: "flags", type: .collection(.bool)),
                PropertyDefinition(name: "kinds", type: .collection(.enumeration(.strings(["rect", "oval"])))),
                PropertyDefinition(name: "levels", type: .collection(.enumeration(.integers([1, 2, 3])))),
                PropertyDefinition(name: "dates", type: .collection(.date)),
                PropertyDefinition(name: "colors", type: .collection(.color)),
            ])
        let item = ModelClass(
            name: "Item",
            properties: [
                PropertyDefinition(name: "label", type: .string),
                PropertyDefinition(name: "tags", type: .collection(.string)),
            ])
        let other = ModelClass(name: "Other", properties: [PropertyDefinition(name: "label", type: .string)])
        do {
            return try Schema(
                classes: [board, item, other], scopes: [ScopeRule(pattern: "board-*", rootClassName: "Board")])
        } catch {
            fatalError("operation fixtures: \(error)")
        }
    }()

    static let root = Fixtures.uuid(1)

    /// Item `n` (uuid 100 + n) and Other `n` (uuid 200 + n).
    static func item(_ number: Int) -> UUID { Fixtures.uuid(100 + number) }
    static func other(_ number: Int) -> UUID { Fixtures.uuid(200 + number) }

    /// A board whose `items` holds items 1…count, whose `others` holds one Other (other(1)), and
    /// whose other properties are set from `properties`.
    static func board(
        items count: Int, _ properties: JSONObject = [:], limits: Limits = Limits()
    ) throws
        -> ScopeState
    {
        var fragments = (0..<count).map { Fixtures.add(item($0 + 1), "Item", ["label": .string("i\($0 + 1)")]) }
        fragments.append(Fixtures.add(other(1), "Other"))
        var rootProperties: JSONObject = [
            "items": .array((0..<count).map { Fixtures.ref(item($0 + 1)) }), "others": [Fixtures.ref(other(1))],
        ]
        for member in properties { rootProperties[member.key] = member.value }
        fragments.append(Fixtures.change(root, "Board", rootProperties))
        let state = ScopeState(rootUUID: root, rootClass: schema.modelClass(named: "Board")!)
        let outcome = state.applying(fragments, schema: schema, limits: limits)
        return try #require(outcome.applied, "board rejected: \(outcome.replies)").state
    }

    /// A `change` of the board.
    static func change(_ properties: JSONObject) -> SyncFragment {
        Fixtures.change(root, "Board", properties)
    }

    /// The board's property `key` as JSON.
    static func value(_ state: ScopeState, _ key: String) -> JSONValue? {
        state.object(root)?[key]?.jsonValue
    }

    /// The items (1-based numbers) a reference collection holds, in order.
    static func itemNumbers(_ state: ScopeState, _ key: String = "items") -> [Int] {
        (state.object(root)?[key]?.referencedUUIDs ?? []).map { uuid in
            let hex = uuid.wireString.suffix(12)
            return Int(hex, radix: 16)! - 100
        }
    }

    /// The one error of a rejected single-fragment set.
    static func error(_ outcome: ChangeSetOutcome) -> FragmentError? {
        guard case .rejected(let replies) = outcome else { return nil }
        return replies.compactMap(\.error).first
    }
}
