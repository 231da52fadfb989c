import Foundation
import JetstreamModel
import PropertyBased
import Testing

/// Properties of collection operations under many writers, and of the diff a client records.
@Suite("Collection-operation properties")
struct CollectionOperationPropertyTests {
    typealias O = OperationFixtures

    /// A writer that edits a possibly stale copy of the board's `notes`, as a client between two
    /// change-set events does.
    struct Writer {
        let name: String
        var view: [String] = []
        var counter = 0

        /// One change set of 1–3 operations objects against `view`: fresh values inserted before a
        /// random anchor (or at the end), random values of the view removed or moved.
        mutating func changeSet(_ random: inout SplitMix) -> [SyncFragment] {
            (0..<Int(1 + random.next() % 3)).map { _ in
                var object = JSONObject()
                var insert: [JSONValue] = []
                for _ in 0..<Int(random.next() % 3) {
                    counter += 1
                    insert.append(.string("\(name)\(counter)"))
                }
                if random.next() % 3 == 0, let moved = pick(&random) { insert.append(.string(moved)) }
                var remove: [JSONValue] = []
                if random.next() % 2 == 0, let removed = pick(&random) { remove.append(.string(removed)) }
                if insert.isEmpty && remove.isEmpty { insert.append(.string("\(name)-\(counter)-end")) }
                if !remove.isEmpty { object["remove"] = .array(remove) }
                if !insert.isEmpty {
                    object["insert"] = .array(insert)
                    let anchor = random.next() % 4 == 0 ? nil : pick(&random)
                    object["before"] = anchor.map(JSONValue.string) ?? .null
                }
                return O.change(["notes": .object(object)])
            }
        }

        private func pick(_ random: inout SplitMix) -> String? {
            view.isEmpty ? nil : view[Int(random.next() % UInt64(view.count))]
        }
    }

    /// What the operations of a set say about each value, in the order the server applies them:
    /// removed values are absent afterwards, inserted (or moved) ones present.
    static func record(_ fragments: [SyncFragment], into expected: inout [String: Bool]) {
        for fragment in fragments {
            guard let operation = fragment.properties["notes"]?.object else { continue }
            for value in operation["remove"]?.array ?? [] { expected[value.string!] = false }
            for value in operation["insert"]?.array ?? [] { expected[value.string!] = true }
        }
    }

    static func notes(_ state: ScopeState) -> [String] {
        O.value(state, "notes")?.array?.map { $0.string! } ?? []
    }

    @Test("N writers on stale views, interleaved in any order: every value inserted and not removed is there once")
    func concurrentWriters() async {
        let seeds = Gen.int(in: 0...Int(Int32.max))
        await propertyCheck(count: 100, input: seeds) { seed in
            var random = SplitMix(seed: UInt64(seed))
            let limits = Limits(maxStringLength: 64, maxCollectionLength: 10_000)
            var server = try O.board(items: 0, ["notes": ["w0", "w1", "w2"]])
            var writers = (0..<Int(2 + random.next() % 3)).map { Writer(name: "writer\($0)-") }
            for index in writers.indices { writers[index].view = Self.notes(server) }
            var expected: [String: Bool] = ["w0": true, "w1": true, "w2": true]
            for _ in 0..<Int(5 + random.next() % 30) {
                let index = Int(random.next() % UInt64(writers.count))
                if random.next() % 4 == 0 {
                    writers[index].view = Self.notes(server)  // the writer caught up with the stream
                    continue
                }
                let fragments = writers[index].changeSet(&random)
                let outcome = server.applying(fragments, schema: O.schema, limits: limits)
                let applied = try #require(outcome.applied, "rejected: \(outcome.replies)")
                server = applied.state
                Self.record(fragments, into: &expected)
                let notes = Self.notes(server)
                #expect(Set(notes).count == notes.count, "a value appears twice: \(notes)")
                let present = Set(notes)
                for (value, shouldBePresent) in expected {
                    #expect(present.contains(value) == shouldBePresent, "\(value) in \(notes)")
                }
                #expect(present.isSubset(of: Set(expected.keys)))
            }
        }
    }

    @Test("the recorded diff applied to the old array gives the new one, in at most maxOperations objects")
    func diffRoundTrip() async {
        let arrays = Gen.int(in: 0...9).array(of: 0...14)
        await propertyCheck(count: 400, input: arrays, arrays) { old, newWithDuplicates in
            var seen: Set<Int> = []
            let new = newWithDuplicates.filter { seen.insert($0).inserted }
            let operations = try #require(CollectionOperation.operations(from: old, to: new, maxOperations: 4))
            #expect(CollectionOperation<Int>.apply(operations, to: old) == new)
            #expect(operations.count <= 4)
            #expect(operations.isEmpty == (old == new))
            // Only what had to change is listed: values that stayed in place are never inserted.
            let inserted = operations.flatMap(\.insert)
            #expect(Set(inserted).count == inserted.count)
            if newWithDuplicates.count != new.count {
                #expect(CollectionOperation.operations(from: old, to: newWithDuplicates) == nil)
            }
        }
    }
}
