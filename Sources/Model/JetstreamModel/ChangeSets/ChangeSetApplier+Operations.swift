import Foundation
import JetstreamJSON

/// A collection of an object that existed before the change set, written by one of its fragments:
/// the normalised fragment holds a placeholder until the set is accepted, when the set's last
/// write of the collection becomes its one wire value and earlier writes leave.
struct CollectionWrite {
    let fragment: Int
    let uuid: UUID
    let property: Int
    let name: String
    let value: Value
}

extension ChangeSetApplier {
    /// The normalised fragments as answers, events and history pages carry them: each collection
    /// property of an object that existed before the set is written once, at the set's last
    /// fragment that wrote it, as one operations object resolved against the object's value before
    /// the set (version v − 1) — or as the whole resulting array when that has no more elements, is
    /// unchanged, or cannot be built by operations (a value twice). Earlier fragments that wrote it
    /// leave it out: a reader applies the set's fragments in order, so at the last one the property
    /// still holds its v − 1 value, and every object the result names is there (the applier creates
    /// a set's added objects before it applies any property). Objects added by the set keep whole
    /// arrays, as states do.
    ///
    /// The diff runs on the model's values and only what is sent becomes JSON, so an insert into
    /// 100,000 shapes no longer turns 100,000 UUIDs into strings: an event of a few hundred bytes
    /// instead of the whole array, for every subscriber.
    static func collectionsAsOperations(
        _ fragments: [SyncFragment], writes: [CollectionWrite], before base: ScopeState
    ) -> [SyncFragment] {
        guard !writes.isEmpty else { return fragments }
        struct Slot: Hashable {
            let uuid: UUID
            let property: Int
        }
        var last: [Slot: Int] = [:]
        for (index, write) in writes.enumerated() { last[Slot(uuid: write.uuid, property: write.property)] = index }
        var result = fragments
        // The applier records writes in fragment order, so one fragment's writes are adjacent.
        var first = 0
        while first < writes.count {
            let fragmentIndex = writes[first].fragment
            var next = first
            var wire: [String: JSONValue] = [:]
            var leftOut: Set<String> = []
            while next < writes.count, writes[next].fragment == fragmentIndex {
                let write = writes[next]
                if last[Slot(uuid: write.uuid, property: write.property)] == next {
                    wire[write.name] = wireValue(of: write.uuid, property: write.property, in: base, to: write.value)
                } else {
                    leftOut.insert(write.name)
                }
                next += 1
            }
            let fragment = fragments[fragmentIndex]
            var properties = JSONObject()
            properties.reserveCapacity(fragment.properties.count)
            for member in fragment.properties where !leftOut.contains(member.key) {
                properties.appendUnchecked(key: member.key, value: wire[member.key] ?? member.value)
            }
            result[fragmentIndex] = SyncFragment(
                type: fragment.type, uuid: fragment.uuid, clsName: fragment.clsName, properties: properties)
            first = next
        }
        return result
    }

    /// One operations object that turns the collection `property` of `owner` from its value in
    /// `base` into `new`, or `new` itself when it is unchanged, has no more elements than the object
    /// would carry, or cannot be built by operations. A `[Model]` collection is diffed on its UUIDs,
    /// its elements' parent links counting their occurrences (O(edit) hashing).
    static func wireValue(of owner: UUID, property: Int, in base: ScopeState, to new: Value) -> JSONValue {
        let oldValue = base.object(owner)?.values[property]
        if case .references(let newUUIDs) = new, case .references(let oldUUIDs)? = oldValue {
            guard newUUIDs != oldUUIDs else { return new.jsonValue }
            let ref = ParentRef(parent: owner, propertyIndex: property)
            let operation = CollectionOperation<UUID>.singleOperation(from: oldUUIDs, to: newUUIDs) { element in
                base.object(element)?.parents.count(of: ref) ?? 0
            }
            guard let operation, operation.remove.count + operation.insert.count + 1 < newUUIDs.count else {
                return new.jsonValue
            }
            return operation.jsonValue { .string($0.wireString) }
        }
        let old = oldValue?.collectionElements ?? []
        guard let elements = new.collectionElements, elements != old,
            let operation = CollectionOperation<Value>.singleOperation(from: old, to: elements),
            operation.remove.count + operation.insert.count + 1 < elements.count
        else { return new.jsonValue }
        return operation.jsonValue
    }
}
