import Foundation
import HashTreeCollections

/// The incoming references of one object, with multiplicity (a `[Model]` may list an object twice).
///
/// Most objects have one or two parents, kept in a small array; an object with many parents (a
/// user every message points at) switches to a persistent hash trie, so adding or removing one
/// parent stays cheap even when the set is shared with a snapshot.
struct ParentSet: Sendable, Hashable {
    struct Entry: Sendable, Hashable {
        let ref: ParentRef
        var count: Int
    }

    private enum Storage: Sendable, Hashable {
        case small([Entry])
        case large(TreeDictionary<ParentRef, Int>)
    }

    private static let smallLimit = 16
    private var storage: Storage = .small([])

    init() {}

    var isEmpty: Bool {
        switch storage {
        case .small(let entries): entries.isEmpty
        case .large(let dictionary): dictionary.isEmpty
        }
    }

    /// Distinct (parent, property) pairs.
    var distinctCount: Int {
        switch storage {
        case .small(let entries): entries.count
        case .large(let dictionary): dictionary.count
        }
    }

    mutating func add(_ ref: ParentRef, count: Int = 1) {
        switch storage {
        case .small(var entries):
            storage = .small([])  // drop the enum's reference so the array is mutated in place
            if let index = entries.firstIndex(where: { $0.ref == ref }) {
                entries[index].count += count
                storage = .small(entries)
            } else if entries.count < ParentSet.smallLimit {
                entries.append(Entry(ref: ref, count: count))
                storage = .small(entries)
            } else {
                var dictionary = TreeDictionary<ParentRef, Int>()
                for entry in entries { dictionary[entry.ref] = entry.count }
                dictionary[ref, default: 0] += count
                storage = .large(dictionary)
            }
        case .large(var dictionary):
            storage = .small([])
            dictionary[ref, default: 0] += count
            storage = .large(dictionary)
        }
    }

    /// Removes `count` occurrences of `ref` (all of them when they are fewer).
    mutating func remove(_ ref: ParentRef, count: Int = 1) {
        switch storage {
        case .small(var entries):
            guard let index = entries.firstIndex(where: { $0.ref == ref }) else { return }
            storage = .small([])
            entries[index].count -= count
            if entries[index].count <= 0 { entries.remove(at: index) }
            storage = .small(entries)
        case .large(var dictionary):
            guard let existing = dictionary[ref] else { return }
            storage = .small([])
            dictionary[ref] = existing > count ? existing - count : nil
            storage = .large(dictionary)
        }
    }

    /// How many times `ref` refers to the owner (0 when it does not).
    func count(of ref: ParentRef) -> Int {
        switch storage {
        case .small(let entries): entries.first { $0.ref == ref }?.count ?? 0
        case .large(let dictionary): dictionary[ref] ?? 0
        }
    }

    /// Every distinct parent reference with its multiplicity (order unspecified).
    var entries: [Entry] {
        switch storage {
        case .small(let entries): entries
        case .large(let dictionary): dictionary.map { Entry(ref: $0.key, count: $0.value) }
        }
    }

    /// A position for walking the parents one at a time without materialising them all.
    struct Cursor {
        fileprivate var smallIndex = 0
        fileprivate var largeIndex: TreeDictionary<ParentRef, Int>.Index?
    }

    var startCursor: Cursor {
        switch storage {
        case .small: Cursor()
        case .large(let dictionary): Cursor(largeIndex: dictionary.startIndex)
        }
    }

    /// The parent at `cursor`, advancing it; nil when the walk is over.
    func next(_ cursor: inout Cursor) -> UUID? {
        switch storage {
        case .small(let entries):
            guard cursor.smallIndex < entries.count else { return nil }
            defer { cursor.smallIndex += 1 }
            return entries[cursor.smallIndex].ref.parent
        case .large(let dictionary):
            guard let index = cursor.largeIndex, index != dictionary.endIndex else { return nil }
            cursor.largeIndex = dictionary.index(after: index)
            return dictionary[index].key.parent
        }
    }

    /// Equal when they hold the same references with the same multiplicities, whatever the order.
    static func == (lhs: ParentSet, rhs: ParentSet) -> Bool {
        guard lhs.distinctCount == rhs.distinctCount else { return false }
        var counts: [ParentRef: Int] = [:]
        for entry in lhs.entries { counts[entry.ref] = entry.count }
        return rhs.entries.allSatisfy { counts[$0.ref] == $0.count }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(distinctCount)
    }
}

/// One incoming reference: the object `parent` refers to the owner through its property at
/// `propertyIndex`.
struct ParentRef: Sendable, Hashable {
    let parent: UUID
    let propertyIndex: Int
}

/// An incoming reference to an object: `uuid`'s property `key` refers to it.
public struct ParentReference: Sendable, Hashable {
    public let uuid: UUID
    public let key: String

    public init(uuid: UUID, key: String) {
        self.uuid = uuid
        self.key = key
    }
}
