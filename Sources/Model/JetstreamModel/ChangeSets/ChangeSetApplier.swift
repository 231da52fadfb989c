import Foundation
import HashTreeCollections
import JetstreamJSON

/// Applies one change set to a staged copy of a state (docs/model.md, "Applying a change set").
///
/// Cost is proportional to what the set touches: values are written through persistent tries, and
/// deciding what left the scope searches upward from the objects that lost a reference (see
/// ``Reachability``) instead of sweeping the tree.
struct ChangeSetApplier {
    private let schema: Schema
    private let limits: Limits
    private let rootClass: ModelClass
    /// The state the set applies to (version v − 1): collections are written against it.
    let base: ScopeState
    private(set) var staged: ScopeState
    private var errors: [FragmentError?] = []
    /// Objects added by this set, with the index of their `add`.
    private(set) var addIndex: [UUID: Int] = [:]
    /// Who writes the set: the owner of what it adds, and the writer the schema's rules judge.
    let author: ChangeAuthor
    /// Whether any rule can refuse this set: the author is bound by rules and the schema has some.
    /// Without, the rule checks and their bookkeeping are skipped entirely.
    let checksRules: Bool
    /// For each object that lost a reference, the first fragment that took it away and through
    /// which property: where a removal the `delete` rule refuses is reported (kept only when
    /// ``checksRules``).
    private(set) var detachedBy: [UUID: (fragment: Int, property: String)] = [:]
    /// The fragment whose properties are being applied.
    private var currentFragment = 0
    private var addOrder: [UUID] = []
    /// Objects that lost at least one incoming reference: the only ones that may have become
    /// unreachable, together with what was added.
    private var lostReference: [UUID] = []
    private var normalised: [SyncFragment?] = []
    /// Collections of objects that existed before the set, as its fragments wrote them: their wire
    /// form is decided once the set is accepted (``collectionsAsOperations(_:writes:before:)``).
    private var collectionWrites: [CollectionWrite] = []

    init(state: ScopeState, schema: Schema, limits: Limits, author: ChangeAuthor) {
        self.schema = schema
        self.limits = limits
        self.author = author
        self.checksRules = author.checksAnything && schema.hasRules
        self.rootClass = state.rootClass
        self.base = state
        self.staged = state
    }

    mutating func run(_ changeSet: ChangeSet) -> ChangeSetOutcome {
        let entries = changeSet.entries
        errors = Array(repeating: nil, count: entries.count)
        normalised = Array(repeating: nil, count: entries.count)
        collectionWrites = []
        if entries.count > limits.maxFragmentsPerSet {
            for index in limits.maxFragmentsPerSet..<entries.count {
                errors[index] = FragmentError(
                    .limitExceeded,
                    "the change set has \(entries.count) fragments; the limit is \(limits.maxFragmentsPerSet)")
            }
        }
        for (index, entry) in entries.enumerated() {
            switch entry {
            case .failure(let error): record(error, at: index)
            case .success(let fragment) where fragment.type == .add: createObject(for: fragment, at: index)
            case .success: break
            }
        }
        for (index, entry) in entries.enumerated() where errors[index] == nil {
            guard case .success(let fragment) = entry else { continue }
            do {
                try applyProperties(of: fragment, at: index)
            } catch {
                record(error, at: index)
            }
        }
        guard !errors.contains(where: { $0 != nil }) else { return rejection() }

        var reachability = Reachability(rootUUID: staged.rootUUID)
        let unreachable = reachability.unreachable(startingFrom: lostReference + addOrder, in: staged.objects)
        for uuid in unreachable {
            if let index = addIndex[uuid] {
                record(
                    FragmentError(
                        .unattachedAdd, "the added \(staged.objects[uuid]!.clsName) is not reachable from the root"),
                    at: index)
            }
        }
        guard !errors.contains(where: { $0 != nil }) else { return rejection() }
        if checksRules {
            for (index, error) in removalRefusals(unreachable) { record(error, at: index) }
            guard !errors.contains(where: { $0 != nil }) else { return rejection() }
        }
        remove(unreachable)

        if staged.objects.count > limits.maxObjectsPerScope {
            let excess = staged.objects.count - limits.maxObjectsPerScope
            for uuid in addOrder.suffix(excess) {
                record(
                    FragmentError(
                        .limitExceeded,
                        "the scope would hold \(staged.objects.count) objects; the limit is "
                            + "\(limits.maxObjectsPerScope)"), at: addIndex[uuid]!)
            }
            return rejection()
        }
        staged.version += 1
        let removed = unreachable.sorted { $0.wireString < $1.wireString }
        let fragments = Self.collectionsAsOperations(normalised.map { $0! }, writes: collectionWrites, before: base)
        return .accepted(AppliedChangeSet(state: staged, fragments: fragments, removed: removed))
    }

    private mutating func record(_ error: FragmentError, at index: Int) {
        if errors[index] == nil { errors[index] = error }
    }

    private func rejection() -> ChangeSetOutcome {
        .rejected(errors.map { $0.map(FragmentReply.error) ?? .ok })
    }

    private mutating func createObject(for fragment: SyncFragment, at index: Int) {
        guard let modelClass = schema.modelClass(named: fragment.clsName) else {
            return record(FragmentError(.unknownClass, "the schema has no class \(fragment.clsName)"), at: index)
        }
        guard schema.allows(className: modelClass.name, inScopeRootedAt: rootClass) else {
            return record(
                FragmentError(
                    .unknownClass, "a scope rooted at \(rootClass.name) cannot hold a \(modelClass.name)"),
                at: index)
        }
        if let earlier = addIndex[fragment.uuid] {
            return record(
                FragmentError(
                    .duplicateAdd, "\(fragment.uuid.wireString) is already added by fragment \(earlier)"),
                at: index)
        }
        guard staged.objects[fragment.uuid] == nil else {
            return record(
                FragmentError(.duplicateAdd, "an object \(fragment.uuid.wireString) already exists"), at: index)
        }
        // Created all the same, so the set's other fragments are judged as they would be.
        if checksRules, modelClass.hasRules, let refusal = addRefusal(modelClass) { record(refusal, at: index) }
        staged.objects[fragment.uuid] = ScopeObject(uuid: fragment.uuid, modelClass: modelClass, owner: author.subject)
        addIndex[fragment.uuid] = index
        addOrder.append(fragment.uuid)
    }

    private mutating func applyProperties(of fragment: SyncFragment, at index: Int) throws(FragmentError) {
        guard let modelClass = staged.objects[fragment.uuid]?.modelClass else {
            throw FragmentError(.unknownObject, "no object \(fragment.uuid.wireString) in the scope or the change set")
        }
        if fragment.type == .change, let added = addIndex[fragment.uuid], added > index {
            throw FragmentError(
                .unknownObject, "\(fragment.uuid.wireString) is added later in the change set (fragment \(added))")
        }
        guard modelClass.name == fragment.clsName else {
            throw FragmentError(
                .classMismatch, "\(fragment.uuid.wireString) is a \(modelClass.name), not a \(fragment.clsName)")
        }
        var updates: [(index: Int, value: Value)] = []
        updates.reserveCapacity(fragment.properties.count)
        for member in fragment.properties {
            guard let propertyIndex = modelClass.propertyIndex(named: member.key) else {
                throw FragmentError(
                    .unknownProperty, "\(modelClass.name) has no property '\(member.key)'", property: member.key)
            }
            // Reads only; no second reference to the trie is kept, so later writes stay in place.
            // Collection operations resolve against the staged value: earlier fragments are seen.
            let current = fragment.type == .change ? staged.objects[fragment.uuid]!.values[propertyIndex] : nil
            let value = try modelClass.properties[propertyIndex].validate(
                member.value, current: current, limits: limits
            ) { staged.objects[$0]?.modelClass }
            updates.append((propertyIndex, value))
        }
        // Schema order makes the normalised fragment independent of the client's key order.
        updates.sort { $0.index < $1.index }
        if checksRules, modelClass.hasRules {
            try checkRules(of: fragment, modelClass: modelClass, updates: updates)
        }
        currentFragment = index
        var properties = JSONObject()
        properties.reserveCapacity(fragment.type == .add ? modelClass.properties.count : updates.count)
        for update in updates {
            let old = staged.objects[fragment.uuid]!.values[update.index]
            if old != update.value {
                staged.objects[fragment.uuid]!.values[update.index] = update.value
                if modelClass.properties[update.index].type.referencedClassName != nil {
                    relink(from: fragment.uuid, property: update.index, old: old, new: update.value)
                }
            }
            if fragment.type == .change {
                let property = modelClass.properties[update.index]
                if property.type.isCollection, base.object(fragment.uuid) != nil {
                    // A placeholder: the accepted set writes it once, as operations or whole.
                    properties.appendUnchecked(key: property.name, value: .null)
                    collectionWrites.append(
                        CollectionWrite(
                            fragment: index, uuid: fragment.uuid, property: update.index, name: property.name,
                            value: update.value))
                } else {
                    properties.appendUnchecked(key: property.name, value: update.value.jsonValue)
                }
            }
        }
        if fragment.type == .add { properties = staged.objects[fragment.uuid]!.propertiesJSON }
        normalised[index] = SyncFragment(
            type: fragment.type, uuid: fragment.uuid, clsName: modelClass.name, properties: properties)
    }

    /// Moves the parent links of one reference property from the old targets to the new ones,
    /// touching only targets whose multiplicity changed.
    private mutating func relink(from parent: UUID, property: Int, old: Value, new: Value) {
        let oldUUIDs = old.referencedUUIDs
        let newUUIDs = new.referencedUUIDs
        // An insert, removal or move in a long collection changes a short middle part: a common
        // prefix and suffix keep their multiplicities, so only the middle is counted.
        var prefix = 0
        while prefix < oldUUIDs.count && prefix < newUUIDs.count && oldUUIDs[prefix] == newUUIDs[prefix] {
            prefix += 1
        }
        var suffix = 0
        while suffix < oldUUIDs.count - prefix && suffix < newUUIDs.count - prefix
            && oldUUIDs[oldUUIDs.count - 1 - suffix] == newUUIDs[newUUIDs.count - 1 - suffix]
        {
            suffix += 1
        }
        let oldMiddle = oldUUIDs[prefix..<(oldUUIDs.count - suffix)]
        let newMiddle = newUUIDs[prefix..<(newUUIDs.count - suffix)]
        var delta: [UUID: Int] = [:]
        for uuid in oldMiddle { delta[uuid, default: 0] -= 1 }
        for uuid in newMiddle { delta[uuid, default: 0] += 1 }
        let ref = ParentRef(parent: parent, propertyIndex: property)
        // Walk the new value first so the order of changes, and so the order of candidates, is stable.
        for uuid in [newMiddle, oldMiddle].joined() {
            guard let change = delta.removeValue(forKey: uuid), change != 0, staged.objects[uuid] != nil else {
                continue
            }
            if change > 0 {
                staged.objects[uuid]!.parents.add(ref, count: change)
            } else {
                staged.objects[uuid]!.parents.remove(ref, count: -change)
                lostReference.append(uuid)
                if checksRules, detachedBy[uuid] == nil {
                    let name = staged.objects[parent]!.modelClass.properties[property].name
                    detachedBy[uuid] = (currentFragment, name)
                }
            }
        }
    }

    /// Takes unreachable objects out, and their links out of the objects that stay.
    private mutating func remove(_ unreachable: [UUID]) {
        let leaving = Set(unreachable)
        for uuid in unreachable {
            guard let object = staged.objects[uuid] else { continue }
            for propertyIndex in object.modelClass.referenceIndexes {
                let ref = ParentRef(parent: uuid, propertyIndex: propertyIndex)
                for target in Set(object.values[propertyIndex].referencedUUIDs) where !leaving.contains(target) {
                    staged.objects[target]?.parents.remove(ref, count: .max)
                }
            }
        }
        for uuid in unreachable { staged.objects[uuid] = nil }
    }
}
