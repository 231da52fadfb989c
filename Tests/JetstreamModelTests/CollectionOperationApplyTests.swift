import Foundation
import JetstreamModel
import Testing

/// Operations objects in `change` fragments, through the change-set applier the server runs
/// (docs/model.md, "Collection operations").
@Suite("Collection operations in change sets")
struct CollectionOperationApplyTests {
    typealias O = OperationFixtures
    typealias F = Fixtures

    struct KindCase: Sendable, CustomTestStringConvertible {
        let key: String
        let start: JSONValue
        let operation: JSONValue
        let result: JSONValue
        var testDescription: String { key }
    }

    /// One insert-before plus one remove on a collection of each element kind.
    static let kinds: [KindCase] = [
        KindCase(
            key: "words", start: ["a", "b", "c"], operation: ["remove": ["a"], "insert": ["x"], "before": "c"],
            result: ["b", "x", "c"]),
        KindCase(
            key: "counts", start: [1, 2, 2, 3], operation: ["remove": [2], "insert": [-7], "before": 3],
            result: [1, -7, 3]),
        KindCase(
            key: "sizes", start: [10, 20], operation: ["remove": [10], "insert": [4_000_000_000], "before": nil],
            result: [20, 4_000_000_000]),
        KindCase(
            key: "ratios", start: [0.5, 1.5], operation: ["remove": [1.5], "insert": [2.25], "before": 0.5],
            result: [2.25, 0.5]),
        KindCase(
            key: "weights", start: [1, 2.5], operation: ["insert": [3], "before": 2.5], result: [1.0, 3.0, 2.5]),
        KindCase(
            key: "flags", start: [true, true], operation: ["insert": [false], "before": true],
            result: [false, true, true]),
        KindCase(
            key: "kinds", start: ["rect"], operation: ["insert": ["oval"], "before": "rect"], result: ["oval", "rect"]),
        KindCase(key: "levels", start: [1, 3], operation: ["remove": [1], "insert": [2]], result: [3, 2]),
        KindCase(
            key: "dates", start: [10, 20.5], operation: ["insert": [15], "before": 20.5], result: [10.0, 15.0, 20.5]),
        KindCase(
            key: "colors", start: [255, 4_278_190_335], operation: ["remove": [255], "insert": [16_711_935]],
            result: [4_278_190_335, 16_711_935]),
    ]

    @Test("every primitive element kind", arguments: kinds)
    func primitiveKinds(_ kind: KindCase) throws {
        let state = try O.board(items: 0, [kind.key: kind.start])
        let outcome = state.applying([O.change([kind.key: kind.operation])], schema: O.schema)
        let applied = try #require(outcome.applied, "rejected: \(outcome.replies)")
        let expected = try O.board(items: 0, [kind.key: kind.result])
        #expect(O.value(applied.state, kind.key) == O.value(expected, kind.key))
        // What is stored, answered and broadcast (one operations object against the state before,
        // or the whole array when that is shorter) gives the same result when a client applies it.
        let replayed = try #require(state.applying(applied.fragments, schema: O.schema).applied)
        #expect(O.value(replayed.state, kind.key) == O.value(expected, kind.key))
    }

    @Test("[Model]: insert an item added in the same set before an anchor; the normalised fragment is that insert")
    func referenceInsert() throws {
        let state = try O.board(items: 3)
        let added = O.item(9)
        let outcome = state.applying(
            [
                O.change(["items": ["insert": [F.ref(added)], "before": F.ref(O.item(2))]]),
                F.add(added, "Item", ["label": "new"]),
            ], schema: O.schema)
        let applied = try #require(outcome.applied, "rejected: \(outcome.replies)")
        #expect(O.itemNumbers(applied.state) == [1, 9, 2, 3])
        #expect(applied.fragments[0].properties["items"] == ["insert": [F.ref(added)], "before": F.ref(O.item(2))])
        #expect(applied.state.parents(of: added) == [ParentReference(uuid: O.root, key: "items")])
    }

    @Test("[Model]: a removed item leaves the scope; a move keeps it")
    func referenceRemoveAndMove() throws {
        let state = try O.board(items: 4)
        let removed = try #require(
            state.applying([O.change(["items": ["remove": [F.ref(O.item(2))]]])], schema: O.schema).applied)
        #expect(O.itemNumbers(removed.state) == [1, 3, 4])
        #expect(removed.removed == [O.item(2)])
        let moved = try #require(
            state.applying(
                [O.change(["items": ["insert": [F.ref(O.item(4))], "before": F.ref(O.item(1))]])], schema: O.schema
            ).applied)
        #expect(O.itemNumbers(moved.state) == [4, 1, 2, 3])
        #expect(moved.removed.isEmpty)
        #expect(moved.state.parents(of: O.item(4)) == [ParentReference(uuid: O.root, key: "items")])
    }

    @Test("[Model]: removing or anchoring on an object that no longer exists is not an error")
    func goneObjects() throws {
        let state = try O.board(items: 2)
        let gone = F.uuid(999)
        let applied = try #require(
            state.applying(
                [O.change(["items": ["remove": [F.ref(gone)], "insert": [F.ref(O.item(1))], "before": F.ref(gone)]])],
                schema: O.schema
            ).applied)
        #expect(O.itemNumbers(applied.state) == [2, 1])
    }

    @Test("anchors: present, absent, removed by an earlier fragment of the same set")
    func anchors() throws {
        let state = try O.board(items: 0, ["words": ["a", "b", "c"]])
        func words(_ fragments: [SyncFragment]) throws -> JSONValue? {
            let outcome = state.applying(fragments, schema: O.schema)
            return O.value(try #require(outcome.applied, "rejected: \(outcome.replies)").state, "words")
        }
        #expect(try words([O.change(["words": ["insert": ["x"], "before": "b"]])]) == ["a", "x", "b", "c"])
        #expect(try words([O.change(["words": ["insert": ["x"], "before": "zz"]])]) == ["a", "b", "c", "x"])
        #expect(
            try words([
                O.change(["words": ["remove": ["b"]]]), O.change(["words": ["insert": ["x"], "before": "b"]]),
            ]) == ["a", "c", "x"])
    }

    @Test("operations resolve against an earlier fragment of the same set (whole array, then operations)")
    func seesEarlierFragments() throws {
        let state = try O.board(items: 3)
        let outcome = state.applying(
            [
                O.change(["items": F.refs(O.item(3), O.item(1))]),
                O.change(["items": ["insert": [F.ref(O.item(2))], "before": F.ref(O.item(1))]]),
                O.change(["items": ["remove": [F.ref(O.item(3))]]]),
            ], schema: O.schema)
        let applied = try #require(outcome.applied, "rejected: \(outcome.replies)")
        #expect(O.itemNumbers(applied.state) == [2, 1])
        #expect(applied.removed == [O.item(3)])
        // One value for the collection in the whole set, at its last fragment, against the state
        // before the set (here the whole array: as short as the operations object).
        #expect(applied.fragments.map { $0.properties["items"] } == [nil, nil, F.refs(O.item(2), O.item(1))])
        let replayed = try #require(state.applying(applied.fragments, schema: O.schema).applied)
        #expect(O.itemNumbers(replayed.state) == [2, 1])
    }

    @Test("duplicates in an existing array: remove takes all, insert collapses, the first anchor counts")
    func duplicatesInExistingArray() throws {
        let (a, b) = (F.ref(O.item(1)), F.ref(O.item(2)))
        let state = try O.board(items: 2, ["items": [a, b, a, b]])
        #expect(O.itemNumbers(state) == [1, 2, 1, 2])
        let removed = try #require(state.applying([O.change(["items": ["remove": [a]]])], schema: O.schema).applied)
        #expect(O.itemNumbers(removed.state) == [2, 2])
        #expect(!removed.state.contains(O.item(1)))
        let collapsed = try #require(
            state.applying([O.change(["items": ["insert": [b], "before": a]])], schema: O.schema).applied)
        #expect(O.itemNumbers(collapsed.state) == [2, 1, 1])
        let anchored = try #require(
            state.applying(
                [F.add(O.item(5), "Item"), O.change(["items": ["insert": [F.ref(O.item(5))], "before": b]])],
                schema: O.schema
            ).applied)
        #expect(O.itemNumbers(anchored.state) == [1, 5, 2, 1, 2])
    }

    @Test("maxCount applies to the result: a move in a full collection is fine, a fourth element is not")
    func maxCountOnResult() throws {
        let refs = (1...3).map { F.ref(O.item($0)) }
        let state = try O.board(items: 4, ["pinned": .array(refs)])
        let moved = state.applying([O.change(["pinned": ["insert": [refs[2]], "before": refs[0]]])], schema: O.schema)
        #expect(moved.applied != nil)
        let swapped = state.applying(
            [O.change(["pinned": ["remove": [refs[0]], "insert": [F.ref(O.item(4))]]])], schema: O.schema)
        #expect(swapped.applied != nil)
        let error = O.error(
            state.applying([O.change(["pinned": ["insert": [F.ref(O.item(4))]]])], schema: O.schema))
        #expect(error?.kind == .constraintViolation)
        #expect(error?.property == "pinned")
    }

    @Test("the collection-length limit applies to the result and to the listed values")
    func lengthLimit() throws {
        let limits = Limits(maxCollectionLength: 3)
        let state = try O.board(items: 0, ["words": ["a", "b", "c"]], limits: limits)
        #expect(
            state.applying([O.change(["words": ["insert": ["c"]]])], schema: O.schema, limits: limits).applied != nil)
        let tooLong = O.error(
            state.applying([O.change(["words": ["insert": ["d"]]])], schema: O.schema, limits: limits))
        #expect(tooLong?.kind == .limitExceeded)
        #expect(tooLong?.property == "words")
        let tooMany = O.error(
            state.applying(
                [O.change(["words": ["remove": ["a", "b", "c", "d"]]])], schema: O.schema, limits: limits))
        #expect(tooMany?.kind == .limitExceeded)
        #expect(tooMany?.property == "words")
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let name: String
        let key: String
        let operation: JSONValue
        let kind: FragmentError.Kind
        let position: String
        var testDescription: String { name }
    }

    static let errors: [ErrorCase] = [
        ErrorCase(
            name: "missing-reference: an inserted UUID names no object", key: "items",
            operation: ["insert": [F.ref(F.uuid(999))]], kind: .missingReference, position: "insert[0]"),
        ErrorCase(
            name: "wrong-class: an inserted object of another class", key: "items",
            operation: ["insert": [F.ref(O.item(1)), F.ref(O.other(1))]], kind: .wrongClass, position: "insert[1]"),
        ErrorCase(
            name: "type-mismatch: a removed value that is not a UUID", key: "items", operation: ["remove": ["nope"]],
            kind: .typeMismatch, position: "remove[0]"),
        ErrorCase(
            name: "type-mismatch: an anchor of the wrong JSON type", key: "items",
            operation: ["insert": [F.ref(O.item(1))], "before": 7], kind: .typeMismatch, position: "before"),
        ErrorCase(
            name: "type-mismatch: a number in a string collection", key: "words", operation: ["insert": [5]],
            kind: .typeMismatch, position: "insert[0]"),
        ErrorCase(
            name: "type-mismatch: a fraction in an integer collection", key: "counts", operation: ["remove": [1.5]],
            kind: .typeMismatch, position: "remove[0]"),
        ErrorCase(
            name: "type-mismatch: an unknown key", key: "words", operation: ["insert": ["a"], "at": 0],
            kind: .typeMismatch, position: ""),
        ErrorCase(
            name: "type-mismatch: insert that is not an array", key: "words", operation: ["insert": "a"],
            kind: .typeMismatch, position: ""),
        ErrorCase(
            name: "null-not-allowed: a null element", key: "words", operation: ["insert": ["a", nil]],
            kind: .nullNotAllowed, position: "insert[1]"),
        ErrorCase(
            name: "null-not-allowed: a null removed reference", key: "items", operation: ["remove": [nil]],
            kind: .nullNotAllowed, position: "remove[0]"),
        ErrorCase(
            name: "out-of-range: an Int8 of 300", key: "counts", operation: ["insert": [300]], kind: .outOfRange,
            position: "insert[0]"),
        ErrorCase(
            name: "out-of-range: below min", key: "ratios", operation: ["insert": [-1]], kind: .outOfRange,
            position: "insert[0]"),
        ErrorCase(
            name: "constraint-violation: longer than maxLength", key: "words", operation: ["insert": ["toolong"]],
            kind: .constraintViolation, position: "insert[0]"),
        ErrorCase(
            name: "constraint-violation: not an enum value", key: "kinds",
            operation: ["insert": ["rect"], "before": "hexagon"], kind: .constraintViolation, position: "before"),
    ]

    @Test("every error names the collection and says which value is at fault", arguments: errors)
    func errorKinds(_ errorCase: ErrorCase) throws {
        let state = try O.board(items: 2)
        let outcome = state.applying([O.change([errorCase.key: errorCase.operation])], schema: O.schema)
        let error = try #require(O.error(outcome))
        #expect(error.kind == errorCase.kind)
        #expect(error.property == errorCase.key)
        #expect(error.message.hasPrefix(errorCase.position))
        #expect(outcome.replies.count == 1)
    }

    @Test("operations in an add are type-mismatch; an operations object for a scalar too")
    func notAllowed() throws {
        let state = try O.board(items: 1)
        let inAdd = O.error(
            state.applying(
                [
                    F.add(O.item(7), "Item", ["tags": ["insert": ["x"]]]),
                    O.change(["items": ["insert": [F.ref(O.item(7))]]]),
                ], schema: O.schema))
        #expect(inAdd?.kind == .typeMismatch)
        #expect(inAdd?.property == "tags")
        #expect(inAdd?.message.contains("only allowed in a change") == true)
        let scalar = O.error(state.applying([O.change(["name": ["insert": ["x"]]])], schema: O.schema))
        #expect(scalar?.kind == .typeMismatch)
        #expect(scalar?.property == "name")
    }

    @Test("a new scope's root gives collections whole: operations are type-mismatch there too")
    func notAllowedInANewRoot() throws {
        let board = try #require(O.schema.modelClass(named: "Board"))
        do {
            _ = try ScopeState.create(rootClass: board, properties: ["words": ["insert": ["a"]]], schema: O.schema)
            Issue.record("operations in a new root were accepted")
        } catch {
            #expect(error.kind == .typeMismatch)
            #expect(error.property == "words")
        }
        let whole = try ScopeState.create(rootClass: board, properties: ["words": ["a"]], schema: O.schema)
        #expect(whole.root["words"] == .list([.string("a")]))
    }

    @Test("a client applying the normalised fragments reaches the server's state")
    func normalisedFragmentsReplay() throws {
        let server = try O.board(items: 3, ["words": ["a", "b"]])
        let client = server
        let outcome = server.applying(
            [
                F.add(O.item(8), "Item"),
                O.change([
                    "items": ["insert": [F.ref(O.item(8))], "before": F.ref(O.item(1))], "words": ["remove": ["a"]],
                ]),
                O.change(["items": ["remove": [F.ref(O.item(2))]]]),
            ], schema: O.schema)
        let applied = try #require(outcome.applied)
        for fragment in applied.fragments where fragment.type == .change {
            for member in fragment.properties { #expect(member.value.array != nil) }
        }
        let mirrored = try #require(client.applying(applied.fragments, schema: O.schema).applied)
        #expect(mirrored.state == applied.state)
        #expect(mirrored.removed == applied.removed)
    }
}
