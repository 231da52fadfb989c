/// The versions of this client's own accepted change sets that an undo may still revert, most
/// recent first (docs/swift-client.md, "Undo and restore"). Pure: the sync records each version
/// the server answered for one of its POSTs (change sets and restores, never the reverts an undo
/// made — so undo twice reverts two different sets), takes the most recent one out before it asks
/// for its revert, and puts it back only when that request could not be made (the next try sends
/// the same `Idempotency-Key`). Keeps at most `limit` versions: the oldest go first.
///
/// ```swift
/// var history = UndoHistory()
/// history.accepted(4)
/// history.accepted(7)
/// history.next()   // 7 — POST …/changesets/7/revert; on a revert-conflict, next() again: 4
/// ```
struct UndoHistory: Sendable, Equatable {
    let limit: Int
    /// Descending.
    private(set) var versions: [Int] = []

    init(limit: Int = 100) {
        self.limit = limit
    }

    /// How many versions an undo may still try.
    var count: Int { versions.count }

    /// The server accepted one of this client's sets at `version` (ignored when already known).
    mutating func accepted(_ version: Int) {
        guard version > 0, !versions.contains(version) else { return }
        let index = versions.firstIndex { $0 < version } ?? versions.endIndex
        versions.insert(version, at: index)
        if versions.count > limit { versions.removeLast(versions.count - limit) }
    }

    /// Takes the most recent version out (nil when none is left): the set to revert now.
    mutating func next() -> Int? {
        versions.isEmpty ? nil : versions.removeFirst()
    }

    /// A revert that could not be asked (network, 5xx, 401): `version` is a candidate again.
    mutating func putBack(_ version: Int) {
        accepted(version)
    }

    /// The server no longer keeps the change set `version` (it is older than the retained
    /// history): the older ones are gone too, as history is trimmed from its start.
    mutating func gone(_ version: Int) {
        versions.removeAll { $0 <= version }
    }
}
