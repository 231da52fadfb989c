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

    /// Records one valid fragment: an `add` as a new object with its class's defaults and
    /// `updates`, a `change` as its writes; either way its normalised fragment (both modes).
    mutating func record(
        _ type: FragmentType, uuid: UUID, modelClass: ModelClass, updates: [(index: Int, value: JSONValue)]
    ) {
        if type == .add {
            var object = ModelObject(uuid: uuid, modelClass: modelClass, values: modelClass.defaultValues)
            for update in updates { object.values[update.index] = update.value }
            added.append(object)
            fragments.append(object.fragment(type: .add))
        } else {
            changes.append((uuid, updates))
            let entries = updates.map { (name: modelClass.properties[$0.index].name, value: $0.value) }
            fragments.append(
                Fragment(
                    type: .change, uuid: uuid, clsName: modelClass.name, properties: PropertyList(entries: entries)))
        }
    }
}
