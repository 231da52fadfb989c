import Foundation

/// The writes of a validated change set, computed without touching the state so that a rejected
/// set changes nothing and an accepted one needs no copy of the scope.
struct ChangeSetPlan: Sendable {
    /// Objects created by `add` fragments, with the properties of their `add`.
    var added: [ModelObject] = []
    /// Property writes of `change` fragments, in fragment order.
    var changes: [(uuid: UUID, values: [(index: Int, value: JSONValue)])] = []
    /// Objects no longer reachable from the root, lowercase and sorted.
    var removed: [UUID] = []
    /// The normalised fragments, one per request fragment.
    var fragments: [Fragment] = []
}
