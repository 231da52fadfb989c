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
