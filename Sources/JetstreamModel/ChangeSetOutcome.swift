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

    /// The accepted set, or nil when rejected.
    public var applied: AppliedChangeSet? {
        if case .accepted(let applied) = self { return applied }
        return nil
    }

    /// One reply per fragment: all `{}` when accepted.
    public var replies: [FragmentReply] {
        switch self {
        case .accepted(let applied): applied.replies
        case .rejected(let replies): replies
        }
    }
}
