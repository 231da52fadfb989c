import Foundation
import JetstreamModel
import PropertyBased
import Testing

/// ``CollectionOperation/singleOperation(from:to:)``: the one operations object a batch sends for a
/// collection property, whatever the edit.
@Suite("Collection operations: one object for old → new")
struct SingleOperationTests {
    typealias Operation = CollectionOperation<String>

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let old: [String]
        let new: [String]
        let operation: Operation?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "equal: an object that changes nothing", old: ["a", "b"], new: ["a", "b"], operation: Operation()),
        Case(name: "append", old: ["a", "b"], new: ["a", "b", "c"], operation: Operation(insert: ["c"])),
        Case(name: "remove", old: ["a", "b", "c"], new: ["a", "c"], operation: Operation(remove: ["b"])),
        Case(
            name: "a move inside the middle is the diff's one object", old: ["a", "b", "c", "d", "e"],
            new: ["a", "d", "b", "c", "e"], operation: Operation(insert: ["d"], before: "b")),
        Case(
            name: "the middle's end is the suffix's first value", old: ["a", "b", "c", "d"], new: ["a", "c", "b", "d"],
            operation: Operation(insert: ["b"], before: "d")),
        Case(
            name: "edits at several places: the trimmed middle, before the suffix", old: ["a", "b", "c", "d", "e"],
            new: ["a", "x", "c", "y", "e"],
            operation: Operation(remove: ["b", "d"], insert: ["x", "c", "y"], before: "e")),
        Case(
            name: "inserts at two places with no shared suffix go to the end", old: ["a", "b", "c"],
            new: ["a", "x", "b", "c", "y"], operation: Operation(insert: ["x", "b", "c", "y"])),
        Case(
            name: "a value old holds twice is not part of the prefix", old: ["a", "b", "a"], new: ["a", "b"],
            operation: Operation(insert: ["a"], before: "b")),
        Case(
            name: "nor of the suffix", old: ["b", "a", "c", "a"], new: ["b", "c", "a"],
            operation: Operation(insert: ["a"])),
        Case(name: "duplicates in the result: none", old: ["a", "b"], new: ["a", "b", "a"], operation: nil),
    ]

    @Test("the one object for an edit", arguments: cases)
    func single(_ testCase: Case) {
        let operation = Operation.singleOperation(from: testCase.old, to: testCase.new)
        #expect(operation == testCase.operation)
        if let operation { #expect(operation.apply(to: testCase.old) == testCase.new) }
    }

    @Test("a 1,000-element edit at six places is one object the size of the edited span, not the array")
    func largeCollection() throws {
        let old = (0..<1000).map { "v\($0)" }
        var new = old
        new.insert("n1", at: 100)
        new.insert("n2", at: 400)
        new.insert("n3", at: 700)
        new.removeAll { $0 == "v250" || $0 == "v600" }
        let moved = new.remove(at: new.firstIndex(of: "v500")!)
        new.insert(moved, at: 300)
        let operation = try #require(Operation.singleOperation(from: old, to: new))
        #expect(operation.apply(to: old) == new)
        #expect(Set(operation.remove) == ["v250", "v600"])
        #expect(operation.insert.first == "n1" && operation.insert.last == "n3")
        #expect(operation.before == new[new.firstIndex(of: "n3")! + 1])
        #expect(operation.insert.count < 700)
    }

    @Test("random edits without duplicates: the object turns old into new and its anchor stays")
    func roundTrip() async {
        let arrays = Gen.int(in: 0...19).array(of: 0...24)
        await propertyCheck(count: 500, input: arrays, arrays) { oldWithDuplicates, newWithDuplicates in
            let old = Self.unique(oldWithDuplicates)
            let new = Self.unique(newWithDuplicates)
            let operation = try #require(CollectionOperation.singleOperation(from: old, to: new))
            Self.check(operation, old: old, new: new)
            #expect((operation == CollectionOperation()) == (old == new))
        }
    }

    @Test("random edits of an old value with duplicates: still one object that gives new")
    func roundTripFromDuplicates() async {
        let arrays = Gen.int(in: 0...7).array(of: 0...16)
        await propertyCheck(count: 500, input: arrays, arrays) { old, newWithDuplicates in
            let new = Self.unique(newWithDuplicates)
            let operation = try #require(CollectionOperation.singleOperation(from: old, to: new))
            Self.check(operation, old: old, new: new)
            if newWithDuplicates.count != new.count {
                #expect(CollectionOperation.singleOperation(from: old, to: newWithDuplicates) == nil)
            }
        }
    }

    @Test(
        "with counted occurrences: old and a few edits of it — an object gives new, and none only where the full pass has none"
    )
    func countedOccurrences() async {
        let arrays = Gen.int(in: 0...7).array(of: 0...16)
        await propertyCheck(count: 1000, input: arrays, arrays) { old, edits in
            // A few edits of `old` (not an unrelated array), so that prefixes and suffixes are
            // shared, duplicates included.
            var new = old
            for (step, value) in edits.prefix(3).enumerated() {
                if value % 3 == 0, !new.isEmpty {
                    new.remove(at: (value + step) % new.count)
                } else {
                    new.insert(value, at: (value * 5 + step) % (new.count + 1))
                }
            }
            let counted = CollectionOperation.singleOperation(from: old, to: new) { value in
                old.filter { $0 == value }.count
            }
            let full = CollectionOperation.singleOperation(from: old, to: new)
            if let counted {
                #expect(counted.apply(to: old) == new, "\(old) → \(new) by \(counted)")
                if let anchor = counted.before {
                    #expect(
                        old.contains(anchor) && !counted.remove.contains(anchor) && !counted.insert.contains(anchor))
                }
            } else {
                #expect(full == nil, "the full pass found \(String(describing: full)) for \(old) → \(new)")
            }
            // It never fails where the full pass succeeds.
            if full != nil { #expect(counted != nil) }
        }
    }

    @Test("with counted occurrences, an anchor that stands twice in old falls back to the full pass")
    func countedDuplicateAnchor() {
        // Inserting before the second of two 5s cannot be said with `before: 5` (the first one).
        let old = [5, 5]
        let new = [5, 3, 5]
        let operation = CollectionOperation.singleOperation(from: old, to: new) { value in
            old.filter { $0 == value }.count
        }
        #expect(operation == nil || operation?.apply(to: old) == new, "\(String(describing: operation))")
    }

    @Test("with counted occurrences, an insert into 100,000 values is the insert alone")
    func countedLargeInsert() throws {
        let old = Array(0..<100_000)
        var new = old
        new.insert(-1, at: 50_000)
        var asked = 0
        let operation = try #require(
            CollectionOperation.singleOperation(from: old, to: new) { value in
                asked += 1
                return value >= 0 ? 1 : 0
            })
        #expect(operation == CollectionOperation(insert: [-1], before: 50_000))
        #expect(asked == 2, "only the inserted value and the anchor are counted")
    }

    private static func unique(_ values: [Int]) -> [Int] {
        var seen: Set<Int> = []
        return values.filter { seen.insert($0).inserted }
    }

    private static func check(_ operation: CollectionOperation<Int>, old: [Int], new: [Int]) {
        #expect(operation.apply(to: old) == new, "\(old) → \(new) by \(operation)")
        if let anchor = operation.before {
            #expect(old.contains(anchor), "anchor \(anchor) not in \(old)")
            #expect(!operation.remove.contains(anchor) && !operation.insert.contains(anchor))
        }
        // Only values of the edited span are listed, each once.
        #expect(Set(operation.insert).count == operation.insert.count)
        #expect(operation.insert.count <= new.count)
    }
}
