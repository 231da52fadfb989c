import Foundation

/// The result of applying a change set: all of it or none of it.
///
/// ```swift
/// switch state.applying(changeSet, schema: schema) {
/// case .accepted(let applied): publish(applied.fragments, removed: applied.removed)
/// case .rejected(let replies): respond(replies.map(\.jsonValue))
/// }
/// ```
public enum ChangeSetOutcome: Sendable {
    case accepted(AppliedChangeSet)
    /// One reply per fragment, in order; at least one is an error. Nothing changed.
    case rejected([FragmentReply])

    public var applied: AppliedChangeSet? {
        if case .accepted(let applied) = self { return applied }
        return nil
    }

    public var replies: [FragmentReply] {
        switch self {
        case .accepted(let applied): applied.replies
        case .rejected(let replies): replies
        }
    }
}

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
