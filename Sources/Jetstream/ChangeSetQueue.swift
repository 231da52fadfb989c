/// Change sets sent but not yet answered, in send order, with the original's latency-compensation
/// rules (pipelined sets; FIFO answers).
///
/// - ``complete(_:)``: the server accepted the set; it leaves the queue and its values stand.
/// - ``revert(_:)``: the server rejected it; its values go back, except keys that a later pending
///   set also changed (the user's newer value stands). Those later sets are rebased: their
///   original value for such a key becomes the rejected set's, so rejecting them too restores the
///   value from before both.
///
/// ```swift
/// let queue = ChangeSetQueue()
/// scope.onChanges { changeSet in
///     queue.append(changeSet)
///     client.send(changeSet) { accepted in accepted ? queue.complete(changeSet) : queue.revert(changeSet) }
/// }
/// ```
/// The queue is confined to its scope's isolation domain, like the scope.
public final class ChangeSetQueue {
    /// The sets awaiting an answer, oldest first.
    public private(set) var pending: [RecordedChangeSet] = []

    public init() {}

    /// Adds a set that was just sent.
    public func append(_ changeSet: RecordedChangeSet) {
        pending.append(changeSet)
    }

    /// The server accepted `changeSet`.
    public func complete(_ changeSet: RecordedChangeSet) {
        pending.removeAll { $0 === changeSet }
    }

    /// The server rejected `changeSet`: revert it (keeping newer pending values) and rebase the
    /// later sets that touched the same keys. A set that is not pending is reverted plainly.
    public func revert(_ changeSet: RecordedChangeSet) {
        guard let index = pending.firstIndex(where: { $0 === changeSet }) else {
            changeSet.revert()
            return
        }
        let later = pending[(index + 1)...]
        var kept: Set<TouchKey> = []
        for touch in changeSet.touches {
            let key = TouchKey(touch)
            guard let laterSet = later.first(where: { $0.touchKeys.contains(key) }) else { continue }
            kept.insert(key)
            laterSet.rebase(key, originalValue: touch.originalValue)
        }
        pending.remove(at: index)
        changeSet.revert(keeping: kept)
    }
}

extension RecordedChangeSet {
    /// Makes `originalValue` this set's value-before for `key` (the set it depended on was rejected).
    func rebase(_ key: TouchKey, originalValue: Any) {
        for index in touches.indices where TouchKey(touches[index]) == key {
            touches[index].originalValue = originalValue
        }
    }
}
