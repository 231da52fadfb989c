import Foundation
import Jetstream
import JetstreamModel
import Testing

/// A deterministic generator, so a failure names a seed that reproduces it.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random edits of a graph of test models (references, collections with appends, inserts, moves
/// and removals, shared children, cycles, detach, values, a primitive collection), applied to a
/// pool of objects of which some are in the scope.
struct RandomEditor {
    var random: SplitMix64
    let pool: [TestModel]

    init(seed: UInt64, root: TestModel, poolSize: Int = 12) {
        random = SplitMix64(state: seed)
        pool = [root] + (1..<poolSize).map { _ in TestModel() }
    }

    mutating func pick() -> TestModel { pool[Int(random.next() % UInt64(pool.count))] }

    mutating func maybePick() -> TestModel? { random.next() % 4 == 0 ? nil : pick() }

    mutating func edit() {
        let target = pick()
        switch random.next() % 11 {
        case 0: target.childModel = maybePick()
        case 1: target.childModel2 = maybePick()
        case 2: target.array.append(pick())
        case 3: if !target.array.isEmpty { target.array.remove(at: Int(random.next() % UInt64(target.array.count))) }
        case 4: target.array2 = (0..<Int(random.next() % 3)).map { _ in pick() }
        case 5: if target.parents.count > 0 { target.detach() }
        case 6: target.integer = Int(random.next() % 100)
        case 7: target.array.insert(pick(), at: Int(random.next() % UInt64(target.array.count + 1)))
        case 8:
            // A move within the collection (recorded as an insert before the next element).
            guard target.array.count > 1 else { return }
            let moved = target.array.remove(at: Int(random.next() % UInt64(target.array.count)))
            target.array.insert(moved, at: Int(random.next() % UInt64(target.array.count + 1)))
        case 9:
            if random.next() % 2 == 0 || target.tags.isEmpty {
                target.tags.insert("t\(random.next() % 8)", at: Int(random.next() % UInt64(target.tags.count + 1)))
            } else {
                target.tags.remove(at: Int(random.next() % UInt64(target.tags.count)))
            }
        default: target.string = random.next() % 3 == 0 ? nil : "s\(random.next() % 10)"
        }
    }
}

/// A short description of where two full states differ.
func firstDifference(_ expected: [SyncFragment], _ actual: [SyncFragment]) -> String {
    let expectedByUUID = Dictionary(expected.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
    let actualByUUID = Dictionary(actual.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
    for fragment in expected {
        guard let other = actualByUUID[fragment.uuid] else { return "missing \(fragment.uuid)" }
        for member in fragment.properties where other.properties[member.key] != member.value {
            return
                "\(fragment.uuid) \(member.key): expected \(member.value), got \(String(describing: other.properties[member.key]))"
        }
    }
    if let extra = actual.first(where: { expectedByUUID[$0.uuid] == nil }) { return "extra \(extra.uuid)" }
    return "same objects, different order"
}

@Suite struct RandomizedGraphTests {
    /// After every edit the scope holds exactly the objects reachable from the root, each with the
    /// scope set, and nothing else claims the scope.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func scopeMembershipIsReachability(seed: UInt64) {
        let root = TestModel()
        let scope = Scope(root: root)
        var editor = RandomEditor(seed: seed, root: root)
        for step in 0..<300 {
            editor.edit()
            var reachable: Set<ObjectIdentifier> = []
            var stack: [ModelObject] = [root]
            while let object = stack.popLast() {
                guard reachable.insert(ObjectIdentifier(object)).inserted else { continue }
                stack += object.children
            }
            let members = Set(editor.pool.filter { $0.scope === scope }.map(ObjectIdentifier.init))
            let indexed = Set(editor.pool.compactMap { scope.getObject($0.uuid) }.map(ObjectIdentifier.init))
            #expect(members == reachable, "seed \(seed) step \(step)")
            #expect(indexed == reachable, "seed \(seed) step \(step)")
            #expect(scope.objectCount == reachable.count, "seed \(seed) step \(step)")
            if members != reachable { return }
        }
    }

    /// Recorded change sets replayed on a replica through the model core's strict application
    /// reproduce the source after every batch: coalescing never drops or invents an add, and every
    /// fragment is valid for the gateway's rules.
    @Test(arguments: [11, 12, 13, 14, 15, 16] as [UInt64])
    func recordedChangesReplayExactly(seed: UInt64) throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let replica = Scope(root: TestModel(uuid: root.uuid))
        var sets: [RecordedChangeSet] = []
        scope.onChanges { sets.append($0) }
        var editor = RandomEditor(seed: seed, root: root)
        for batch in 0..<60 {
            let edits = 1 + Int(editor.random.next() % 6)
            scope.modify {
                for _ in 0..<edits { editor.edit() }
            }
            for set in sets {
                do {
                    try replica.applySyncFragments(set.fragments)
                } catch {
                    Issue.record("seed \(seed) batch \(batch): \(error)")
                    return
                }
            }
            sets = []
            let expected = try scope.currentState().exportFragments()
            let actual = try replica.currentState().exportFragments()
            if actual != expected {
                Issue.record("seed \(seed) batch \(batch): \(firstDifference(expected, actual))")
                return
            }
        }
    }

    /// Reverting every recorded set, newest first, restores the initial state.
    @Test(arguments: [21, 22, 23, 24] as [UInt64])
    func revertingEverythingRestoresTheStart(seed: UInt64) throws {
        let root = TestModel()
        let scope = Scope(root: root)
        let start = try scope.currentState().exportFragments()
        var sets: [RecordedChangeSet] = []
        scope.onChanges { sets.append($0) }
        var editor = RandomEditor(seed: seed, root: root)
        for _ in 0..<30 {
            scope.modify {
                for _ in 0..<3 { editor.edit() }
            }
        }
        for set in sets.reversed() {
            set.revert()
        }
        #expect(try scope.currentState().exportFragments() == start, "seed \(seed)")
        #expect(scope.objectCount == 1)
    }
}
