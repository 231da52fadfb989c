import Foundation
import JetstreamModel
import Testing

/// The operations themselves, without a schema: ``CollectionOperation/apply(to:)``, reading and
/// writing the JSON object, and the diff a client records.
@Suite("Collection operations: apply, JSON, diff")
struct CollectionOperationTests {
    typealias Operation = CollectionOperation<String>

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let start: [String]
        let operation: Operation
        let result: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "insert before a present anchor", start: ["a", "b", "c"],
            operation: Operation(insert: ["x", "y"], before: "b"), result: ["a", "x", "y", "b", "c"]),
        Case(
            name: "before nil appends", start: ["a", "b"], operation: Operation(insert: ["x"]),
            result: ["a", "b", "x"]),
        Case(
            name: "an absent anchor appends", start: ["a", "b"], operation: Operation(insert: ["x"], before: "zz"),
            result: ["a", "b", "x"]),
        Case(
            name: "an anchor removed by the same object appends", start: ["a", "b", "c"],
            operation: Operation(remove: ["b"], insert: ["x"], before: "b"), result: ["a", "c", "x"]),
        Case(
            name: "an anchor that is itself inserted is taken out first, so the values go to the end",
            start: ["a", "b", "c"], operation: Operation(insert: ["x", "a"], before: "a"), result: ["b", "c", "x", "a"]),
        Case(
            name: "insert into an empty collection", start: [], operation: Operation(insert: ["x"], before: "a"),
            result: ["x"]),
        Case(
            name: "remove takes every occurrence", start: ["a", "b", "a", "c", "a"],
            operation: Operation(remove: ["a"]),
            result: ["b", "c"]),
        Case(
            name: "removing a value that is not there is ignored", start: ["a"], operation: Operation(remove: ["q"]),
            result: ["a"]),
        Case(
            name: "an inserted value that is present moves (ends up once)", start: ["a", "b", "c"],
            operation: Operation(insert: ["c"], before: "a"), result: ["c", "a", "b"]),
        Case(
            name: "remove + insert of one value is a move", start: ["a", "b", "c"],
            operation: Operation(remove: ["a"], insert: ["a"], before: nil), result: ["b", "c", "a"]),
        Case(
            name: "a value listed twice in insert goes in once, at its first place", start: ["a"],
            operation: Operation(insert: ["x", "y", "x"], before: "a"), result: ["x", "y", "a"]),
        Case(
            name: "an anchor listed twice: the first occurrence counts", start: ["a", "b", "a"],
            operation: Operation(insert: ["x"], before: "a"), result: ["x", "a", "b", "a"]),
        Case(
            name: "inserting a duplicated value collapses it to one", start: ["a", "b", "a"],
            operation: Operation(insert: ["a"], before: "b"), result: ["a", "b"]),
        Case(
            name: "untouched duplicates stay", start: ["a", "a", "b"], operation: Operation(remove: ["b"]),
            result: ["a", "a"]),
        Case(
            name: "many removed values (hashed, not compared)", start: ["a", "b", "c", "d", "e", "f", "g"],
            operation: Operation(remove: ["b", "d", "f", "g", "q"], insert: ["x"], before: "c"),
            result: ["a", "x", "c", "e"]),
        Case(name: "an empty object changes nothing", start: ["a", "b"], operation: Operation(), result: ["a", "b"]),
    ]

    @Test("apply", arguments: cases)
    func apply(_ testCase: Case) {
        #expect(testCase.operation.apply(to: testCase.start) == testCase.result)
    }

    @Test("operations apply one after the other")
    func sequence() {
        let operations = [Operation(insert: ["x"], before: "b"), Operation(remove: ["a"], insert: ["y"], before: "x")]
        #expect(Operation.apply(operations, to: ["a", "b"]) == ["y", "x", "b"])
    }

    @Test("reading an operations object: before null and absent both mean the end")
    func parse() throws {
        let both = try CollectionOperation(json: ["remove": ["a"], "insert": ["b", 1], "before": "c"], property: "p")
        #expect(both == CollectionOperation(remove: ["a"], insert: ["b", 1], before: "c"))
        let atEnd = try CollectionOperation(json: ["insert": ["b"], "before": nil], property: "p")
        #expect(atEnd.before == nil)
        let removeOnly = try CollectionOperation(json: ["remove": []], property: "p")
        #expect(removeOnly == CollectionOperation(remove: [], insert: [], before: nil))
    }

    @Test(
        "a malformed operations object is type-mismatch on the property",
        arguments: [
            [:], ["before": "a"], ["insert": "a"], ["remove": ["x": 1]], ["insert": [], "after": "a"], ["insert": nil],
        ] as [JSONValue])
    func malformed(_ json: JSONValue) {
        #expect {
            try CollectionOperation(json: json, property: "tags")
        } throws: { error in
            let error = error as? FragmentError
            return error?.kind == .typeMismatch && error?.property == "tags"
        }
    }

    @Test("written form: remove alone, insert with before (null at the end), both")
    func encode() {
        let value = { (text: String) in Value.string(text) }
        #expect(CollectionOperation(remove: [value("a")]).jsonValue.encodedString() == #"{"remove":["a"]}"#)
        #expect(
            CollectionOperation(insert: [value("b")]).jsonValue.encodedString() == #"{"insert":["b"],"before":null}"#)
        #expect(
            CollectionOperation(remove: [value("a")], insert: [value("b")], before: value("c")).jsonValue
                .encodedString() == #"{"remove":["a"],"insert":["b"],"before":"c"}"#)
    }

    struct DiffCase: Sendable, CustomTestStringConvertible {
        let name: String
        let old: [String]
        let new: [String]
        let operations: [Operation]?
        var testDescription: String { name }
    }

    static let diffCases: [DiffCase] = [
        DiffCase(name: "equal: nothing", old: ["a", "b"], new: ["a", "b"], operations: []),
        DiffCase(name: "append", old: ["a", "b"], new: ["a", "b", "c"], operations: [Operation(insert: ["c"])]),
        DiffCase(
            name: "insert anchored on the next element", old: ["a", "b"], new: ["a", "x", "y", "b"],
            operations: [Operation(insert: ["x", "y"], before: "b")]),
        DiffCase(name: "remove", old: ["a", "b", "c"], new: ["a", "c"], operations: [Operation(remove: ["b"])]),
        DiffCase(
            name: "remove a duplicated value", old: ["a", "b", "a"], new: ["b"], operations: [Operation(remove: ["a"])]),
        DiffCase(
            name: "move one element", old: ["a", "b", "c", "d"], new: ["a", "d", "b", "c"],
            operations: [Operation(insert: ["d"], before: "b")]),
        DiffCase(
            name: "remove and insert in one object", old: ["a", "b", "c"], new: ["x", "a", "c"],
            operations: [Operation(remove: ["b"], insert: ["x"], before: "a")]),
        DiffCase(
            name: "inserts at two places: two objects", old: ["a", "b", "c"], new: ["a", "x", "b", "c", "y"],
            operations: [Operation(insert: ["x"], before: "b"), Operation(insert: ["y"])]),
        DiffCase(
            name: "a duplicate that becomes single is moved", old: ["a", "b", "a"], new: ["b", "a"],
            operations: [Operation(insert: ["a"])]),
        DiffCase(name: "duplicates in the result: whole array", old: ["a"], new: ["a", "a"], operations: nil),
    ]

    @Test("the diff a client records", arguments: diffCases)
    func diff(_ testCase: DiffCase) {
        let operations = Operation.operations(from: testCase.old, to: testCase.new)
        #expect(operations == testCase.operations)
        if let operations { #expect(Operation.apply(operations, to: testCase.old) == testCase.new) }
    }

    @Test("a shuffle needing more objects than allowed is one object inserting everything at the end")
    func shuffle() throws {
        let old = (0..<20).map(String.init)
        let new = (0..<20).map { String(($0 * 7) % 20) } + ["x"]
        let operations = try #require(Operation.operations(from: old, to: new, maxOperations: 3))
        #expect(operations == [Operation(insert: new)])
        #expect(Operation.apply(operations, to: old) == new)
        // Another writer's value, inserted meanwhile, survives (a whole array would erase it).
        #expect(Operation.apply(operations, to: old + ["theirs"]) == ["theirs"] + new)
    }
}
