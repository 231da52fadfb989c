/// One operations object on a collection property: take values out, then put values in before an
/// anchor (docs/model.md, "Collection operations"). The server's applier, the typed
/// framework and the merge patch all resolve operations with ``apply(to:)``, so they agree exactly.
///
/// ```swift
/// let move = CollectionOperation(insert: ["c"], before: "a")
/// move.apply(to: ["a", "b", "c"])                                   // ["c", "a", "b"]
/// CollectionOperation(remove: ["b"]).apply(to: ["a", "b", "b"])     // ["a"]
/// ```
///
/// The rules, in order:
/// 1. Every occurrence of each `remove` value leaves; a value that is not there is ignored.
/// 2. Every occurrence of each `insert` value leaves too, so an inserted value that is already
///    present is **moved** and ends up once (remove + insert of one value is a move as well).
/// 3. The `insert` values go, in their order, immediately before the first occurrence of `before`
///    in what is left, or at the end when `before` is nil or not there. An anchor that is itself
///    inserted (or removed) was taken out in steps 1–2, so it is not there: the values go to the end.
/// 4. A value listed twice in `insert` is inserted once, at its first place in the list.
///
/// The cost is O(n + k) for a collection of n elements and k listed values.
public struct CollectionOperation<Element> {
    /// Values to take out (every occurrence).
    public var remove: [Element]
    /// Values to put in, in this order (an existing one is moved).
    public var insert: [Element]
    /// The value the inserted ones go in front of; nil for the end.
    public var before: Element?

    /// An operations object; with the defaults it changes nothing.
    public init(remove: [Element] = [], insert: [Element] = [], before: Element? = nil) {
        self.remove = remove
        self.insert = insert
        self.before = before
    }
}

extension CollectionOperation: Sendable where Element: Sendable {}
extension CollectionOperation: Equatable where Element: Equatable {}
extension CollectionOperation: Hashable where Element: Hashable {}

extension CollectionOperation where Element: Hashable {
    /// The collection after these operations (see the rules on ``CollectionOperation``).
    ///
    /// ```swift
    /// CollectionOperation(insert: ["x"], before: "b").apply(to: ["a", "b"])   // ["a", "x", "b"]
    /// CollectionOperation(insert: ["x"], before: "gone").apply(to: ["a"])     // ["a", "x"]
    /// ```
    public func apply(to elements: [Element]) -> [Element] {
        var inserted: [Element] = []
        var leaving = Set<Element>(minimumCapacity: insert.count + remove.count)
        if insert.count == 1 {
            inserted = insert
            leaving.insert(insert[0])
        } else {
            inserted.reserveCapacity(insert.count)
            for element in insert where leaving.insert(element).inserted { inserted.append(element) }
        }
        leaving.formUnion(remove)

        var result: [Element]
        if leaving.isEmpty {
            result = elements
        } else if leaving.count <= Self.linearSearchLimit {
            // A handful of values: comparing beats hashing every element of a long collection.
            let few = Array(leaving)
            result = elements.filter { !few.contains($0) }
        } else {
            result = elements.filter { !leaving.contains($0) }
        }
        guard !inserted.isEmpty else { return result }
        let position = before.flatMap { result.firstIndex(of: $0) } ?? result.endIndex
        result.insert(contentsOf: inserted, at: position)
        return result
    }

    /// Up to this many distinct listed values, elements are compared with each instead of hashed.
    static var linearSearchLimit: Int { 4 }

    /// Applies `operations` one after the other.
    public static func apply(_ operations: [CollectionOperation], to elements: [Element]) -> [Element] {
        operations.reduce(elements) { $1.apply(to: $0) }
    }
}
