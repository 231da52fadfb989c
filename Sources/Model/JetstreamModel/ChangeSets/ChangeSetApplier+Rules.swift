import Foundation
import HashTreeCollections

/// The schema's write rules, judged while a set is applied (docs/model.md, "Ownership and write
/// rules"). A write is a value that changes: a `change` that sets a property to what it holds
/// already writes nothing, so it passes every rule — a client may resend whole objects.
extension ChangeSetApplier {
    /// Why the author may not add an object of `modelClass`: a role rule it does not meet (the
    /// class's `write`). An `owner` rule always lets the add through: its author becomes the owner.
    func addRefusal(_ modelClass: ModelClass) -> FragmentError? {
        guard case .role = modelClass.rules.write, !modelClass.rules.write.allows(author, owner: author.subject)
        else { return nil }
        return FragmentError(.forbidden, modelClass.rules.write.refusal("add", of: modelClass.name, owner: nil))
    }

    /// Checks the values a fragment changes against the class's `write` rule, each property's
    /// `write` rule and `immutable`. Objects the set adds are their author's and still being
    /// built: only role rules bind their properties, and only where a value differs from the
    /// default.
    func checkRules(
        of fragment: SyncFragment, modelClass: ModelClass, updates: [(index: Int, value: Value)]
    ) throws(FragmentError) {
        guard let object = staged.objects[fragment.uuid] else { return }
        let isNew = addIndex[fragment.uuid] != nil
        let owner = isNew ? author.subject : object.owner
        var checkedClassRule = false
        for update in updates {
            // A value that does not change is no write. An object being added holds its defaults
            // until its add is applied, so an add that names a property at its default (a client
            // sending whole objects) writes nothing there either.
            guard object.values[update.index] != update.value else { continue }
            let property = modelClass.properties[update.index]
            if !checkedClassRule, !isNew {
                checkedClassRule = true
                let rule = modelClass.rules.write
                if !rule.allows(author, owner: owner) {
                    throw FragmentError(
                        .forbidden, rule.refusal("change", of: modelClass.name, owner: owner), property: property.name)
                }
            }
            guard property.hasRules else { continue }
            if property.isImmutable, !isNew, author.checksImmutability {
                throw FragmentError(
                    .immutable,
                    "\(modelClass.name).\(property.name) is immutable: its add set it, and it never changes after",
                    property: property.name)
            }
            if !property.write.allows(author, owner: owner) {
                throw FragmentError(
                    .forbidden,
                    property.write.refusal("change", of: modelClass.name, property: property.name, owner: owner),
                    property: property.name)
            }
        }
    }

    /// The removals the `delete` rules refuse, each reported at the fragment that took the object's
    /// last reference away, naming the property it was dropped from (or, for an object that left
    /// with its parent, at the first fragment that detached anything, and its property).
    func removalRefusals(_ unreachable: [UUID]) -> [(index: Int, error: FragmentError)] {
        guard author.checksOwnership else { return [] }
        let firstDetaching = detachedBy.values.min { $0.fragment < $1.fragment } ?? (0, "")
        var refusals: [(index: Int, error: FragmentError)] = []
        for uuid in unreachable {
            guard let object = base.object(uuid), object.modelClass.hasRules else { continue }
            let rule = object.modelClass.rules.delete
            guard !rule.allows(author, owner: object.owner) else { continue }
            let message = rule.refusal("remove", of: object.clsName, owner: object.owner) + " (\(uuid.wireString))"
            let detached = detachedBy[uuid] ?? firstDetaching
            refusals.append(
                (
                    detached.fragment,
                    FragmentError(.forbidden, message, property: detached.property.isEmpty ? nil : detached.property)
                ))
        }
        return refusals
    }
}
