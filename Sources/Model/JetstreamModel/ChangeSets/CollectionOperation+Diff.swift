extension CollectionOperation where Element: Hashable {
    /// Operations that turn `old` into `new` (applied in order with ``apply(to:)``), the way a
    /// client records a local edit: values that left are removed, and each run of new or moved
    /// values is inserted before the next value that stayed in place (`before: nil` at the end).
    ///
    /// ```swift
    /// CollectionOperation.operations(from: ["a", "b", "c"], to: ["a", "x", "b"])
    /// // [{remove: ["c"], insert: ["x"], before: "b"}]
    /// ```
    ///
    /// - `[]` when the two are equal.
    /// - `nil` when `new` holds a value twice: operations cannot build duplicates (an inserted value
    ///   ends up once), so the caller sends the whole array.
    /// - The values that stay in place are a longest run of `old`'s values in `new`'s order, so an
    ///   append, an insert, a removal or a move of one element is one operations object. When the
    ///   edit needs more than `maxOperations` objects (a shuffle), it is one object that removes what
    ///   left and inserts all of `new` at the end: still the same result, and values another writer
    ///   inserted meanwhile survive, which a whole array would erase.
    ///
    /// Cost: O(n log n) for n elements.
    public static func operations(
        from old: [Element], to new: [Element], maxOperations: Int = 8
    ) -> [CollectionOperation]? {
        guard old != new else { return [] }
        var positionInNew: [Element: Int] = [:]
        positionInNew.reserveCapacity(new.count)
        for (index, element) in new.enumerated() {
            guard positionInNew.updateValue(index, forKey: element) == nil else { return nil }
        }
        var removed: [Element] = []
        var removedSet: Set<Element> = []
        var countInOld: [Element: Int] = [:]
        for element in old {
            if positionInNew[element] == nil {
                if removedSet.insert(element).inserted { removed.append(element) }
            } else {
                countInOld[element, default: 0] += 1
            }
        }
        // Values that appear once in `old` may stay where they are; a duplicate must be moved so
        // that it ends up once.
        let candidates = old.compactMap { element -> Int? in
            countInOld[element] == 1 ? positionInNew[element] : nil
        }
        var stays = [Bool](repeating: false, count: new.count)
        for position in longestIncreasingSubsequence(candidates) { stays[position] = true }

        var operations: [CollectionOperation] = []
        var run: [Element] = []
        for (index, element) in new.enumerated() {
            if stays[index] {
                if !run.isEmpty {
                    operations.append(CollectionOperation(insert: run, before: element))
                    run = []
                }
            } else {
                run.append(element)
            }
        }
        if !run.isEmpty { operations.append(CollectionOperation(insert: run, before: nil)) }
        if operations.count > maxOperations {
            return [CollectionOperation(remove: removed, insert: new, before: nil)]
        }
        if !removed.isEmpty {
            if operations.isEmpty {
                operations.append(CollectionOperation(remove: removed))
            } else {
                operations[0].remove = removed
            }
        }
        return operations
    }

    /// The one operations object that turns `old` into `new`, for a batch that may send one per
    /// property: the shared prefix and suffix stay (`old = P + Mo + S`, `new = P + Mn + S`), and the
    /// middle is ``operations(from:to:maxOperations:)`` with `maxOperations: 1`. That is the diff's
    /// single object when one suffices (an insert, a removal, a move), else `{remove: values of Mo
    /// not in Mn, insert: Mn, before: S.first}` (values of Mo that are in Mn are moved by the insert).
    ///
    /// ```swift
    /// CollectionOperation.singleOperation(from: ["a", "b", "c", "d", "e"], to: ["a", "x", "c", "y", "e"])
    /// // {remove: ["b", "d"], insert: ["x", "c", "y"], before: "e"}
    /// ```
    ///
    /// - `nil` when `new` holds a value twice (operations cannot build duplicates): send the array.
    /// - `CollectionOperation()`, which changes nothing, when the two are equal.
    /// - The anchor, when there is one, is a value of `old` the operation neither removes nor
    ///   inserts, so it is still there when the inserted values go in front of it.
    /// - A value `old` holds twice ends the prefix or suffix, so it is in the middle and is removed
    ///   or moved to one place (a shared value outside the middle would otherwise be taken out too).
    ///
    /// The caller chooses between this and the whole array (whichever is shorter to send); another
    /// writer's values inserted meanwhile survive the operation, not the array.
    ///
    /// Cost: O(n) for the trim plus O(m log m) for the middle's m elements.
    public static func singleOperation(from old: [Element], to new: [Element]) -> CollectionOperation? {
        var inNew = Set<Element>(minimumCapacity: new.count)
        for element in new {
            guard inNew.insert(element).inserted else { return nil }
        }
        var inOld = Set<Element>(minimumCapacity: old.count)
        var twiceInOld: Set<Element> = []
        for element in old where !inOld.insert(element).inserted { twiceInOld.insert(element) }
        let middle = trimmed(old, new) { twiceInOld.contains($0) }
        return middleOperation(old, new, middle)
    }

    /// ``singleOperation(from:to:)`` when the caller can count a value's occurrences in `old` in
    /// O(1) — a `[Model]` collection can, from its elements' parent links: the prefix and suffix are
    /// trimmed by comparison alone and only the middle is hashed, so an edit of a few elements in a
    /// collection of 100,000 costs comparisons, not 200,000 hash insertions. When a value the
    /// operation names (the middle's, old or new) also stands in the prefix or suffix — where
    /// removing or placing it would touch that copy too — it falls back to the full pass.
    ///
    /// Unlike the full pass it keeps a duplicate the edit leaves alone (two copies in the prefix):
    /// the operation still builds exactly `new`.
    public static func singleOperation(
        from old: [Element], to new: [Element], occurrencesInOld: (Element) -> Int
    ) -> CollectionOperation? {
        let middle = trimmed(old, new) { _ in false }
        var counts: [Element: Int] = [:]
        for element in old[middle.start..<middle.oldEnd] { counts[element, default: 0] += 1 }
        var inNewMiddle = Set<Element>(minimumCapacity: middle.newEnd - middle.start)
        for element in new[middle.start..<middle.newEnd] {
            guard inNewMiddle.insert(element).inserted else { return singleOperation(from: old, to: new) }
            if counts[element] == nil { counts[element] = 0 }
        }
        for (element, inMiddle) in counts where occurrencesInOld(element) != inMiddle {
            return singleOperation(from: old, to: new)
        }
        let operation = middleOperation(old, new, middle)
        // `before` names the first occurrence: an anchor that stands twice in `old` (the suffix's
        // first value, copied in the prefix) would put the insert in front of the wrong copy.
        if let anchor = operation?.before, occurrencesInOld(anchor) != 1 {
            return singleOperation(from: old, to: new)
        }
        return operation
    }

    /// The end of the prefix and the start of the suffix `old` and `new` share, compared element
    /// by element; a value for which `stops` is true ends either.
    private static func trimmed(
        _ old: [Element], _ new: [Element], stops: (Element) -> Bool
    ) -> (start: Int, oldEnd: Int, newEnd: Int) {
        var start = 0
        let shorter = min(old.count, new.count)
        while start < shorter, old[start] == new[start], !stops(old[start]) { start += 1 }
        var oldEnd = old.count
        var newEnd = new.count
        while oldEnd > start, newEnd > start, old[oldEnd - 1] == new[newEnd - 1], !stops(new[newEnd - 1]) {
            oldEnd -= 1
            newEnd -= 1
        }
        return (start, oldEnd, newEnd)
    }

    /// The middle's one object (it holds no value twice, so the diff answers with at most one),
    /// its end anchored on the suffix's first value in the whole collection.
    private static func middleOperation(
        _ old: [Element], _ new: [Element], _ middle: (start: Int, oldEnd: Int, newEnd: Int)
    ) -> CollectionOperation? {
        guard
            let operations = operations(
                from: Array(old[middle.start..<middle.oldEnd]), to: Array(new[middle.start..<middle.newEnd]),
                maxOperations: 1)
        else { return nil }
        guard var operation = operations.first else { return CollectionOperation() }
        if operation.before == nil, !operation.insert.isEmpty, middle.newEnd < new.count {
            operation.before = new[middle.newEnd]
        }
        return operation
    }

    /// The values of one longest strictly increasing subsequence of `sequence` (patience sorting).
    private static func longestIncreasingSubsequence(_ sequence: [Int]) -> [Int] {
        guard !sequence.isEmpty else { return [] }
        // tails[k]: index in `sequence` of the smallest tail of an increasing run of length k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: sequence.count)
        for (index, value) in sequence.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if sequence[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var result: [Int] = []
        result.reserveCapacity(tails.count)
        var cursor = tails[tails.count - 1]
        while cursor >= 0 {
            result.append(sequence[cursor])
            cursor = previous[cursor]
        }
        return result.reversed()
    }
}
