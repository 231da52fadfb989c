/// The result of applying a change set: accepted as a whole, or rejected with one reply per
/// fragment and nothing applied.
enum ChangeSetOutcome: Sendable {
    case accepted(AppliedChangeSet)
    case rejected([FragmentReply])
}
