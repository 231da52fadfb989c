/// A fragment's `type`. Like the gateway, there is no `remove`: objects leave a scope when they are
/// no longer reachable from its root.
enum FragmentType: String, Sendable, Codable {
    case add
    case change
}
