import Foundation

/// An accepted change set: the new state and what to store and broadcast.
public struct AppliedChangeSet: Sendable {
    /// The state after the change set, at version + 1.
    public let state: ScopeState
    /// The fragments as stored and broadcast: `add` with every property, `change` with the given
    /// properties; properties in schema order, values normalised (lowercase UUIDs, canonical numbers).
    public let fragments: [SyncFragment]
    /// Objects that left the scope because they were no longer reachable from the root, sorted.
    public let removed: [UUID]

    /// `{}` for every fragment.
    public var replies: [FragmentReply] { Array(repeating: .ok, count: fragments.count) }
}
