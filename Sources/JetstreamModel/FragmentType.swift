/// Whether a fragment creates an object or changes one. There is no `remove`: an object leaves its
/// scope when it is no longer reachable from the root.
public enum FragmentType: String, Sendable, Hashable {
    case add
    case change
}
