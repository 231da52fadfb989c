import Foundation
import JetstreamJSON

extension ChangeSetApplier {
    /// The normalised fragments as answers, events and history pages carry them: each collection
    /// property of an object that existed before the set is written once, at the set's last
    /// fragment that wrote it, as one operations object resolved against the object's value
    /// before the set (version v − 1) — or as the whole resulting array when that is shorter, or
    /// when operations cannot build it (a value twice). Earlier fragments that wrote it leave it
    /// out: a reader applies the set's fragments in order, so at the last one the property still
    /// holds its v − 1 value, and every object the result names is there (the applier creates a
    /// set's added objects before it applies any property). Objects added by the set keep whole
    /// arrays, as states do.
    ///
    /// An insert into a collection of 10,000 shapes is then an event of a few hundred bytes
    /// instead of the ~370 KB of the whole array, for every subscriber.
    static func collectionsAsOperations(_ fragments: [SyncFragment], before base: ScopeState) -> [SyncFragment] {
        struct Slot: Hashable {
            let uuid: UUID
            let property: String
        }
        var lastWrite: [Slot: Int] = [:]
        for (index, fragment) in fragments.enumerated() where fragment.type == .change {
            guard let object = base.object(fragment.uuid) else { continue }
            for member in fragment.properties {
                guard let property = object.modelClass.propertyIndex(named: member.key),
                    object.modelClass.properties[property].type.isCollection
                else { continue }
                lastWrite[Slot(uuid: fragment.uuid, property: member.key)] = index
            }
        }
        guard !lastWrite.isEmpty else { return fragments }
        var result = fragments
        for (index, fragment) in fragments.enumerated() where fragment.type == .change {
            guard let object = base.object(fragment.uuid) else { continue }
            var properties = JSONObject()
            properties.reserveCapacity(fragment.properties.count)
            for member in fragment.properties {
                guard let last = lastWrite[Slot(uuid: fragment.uuid, property: member.key)],
                    let property = object.modelClass.propertyIndex(named: member.key)
                else {
                    properties.appendUnchecked(key: member.key, value: member.value)
                    continue
                }
                guard last == index else { continue }
                let old = object.values[property].jsonValue.array ?? []
                properties.appendUnchecked(key: member.key, value: wireValue(from: old, to: member.value))
            }
            result[index] = SyncFragment(
                type: fragment.type, uuid: fragment.uuid, clsName: fragment.clsName, properties: properties)
        }
        return result
    }

    /// One operations object that turns `old` into `new`, or `new` itself when it is unchanged,
    /// has no more elements than the object would carry, or cannot be built by operations.
    static func wireValue(from old: [JSONValue], to new: JSONValue) -> JSONValue {
        guard let elements = new.array, elements != old,
            let operation = CollectionOperation<JSONValue>.singleOperation(from: old, to: elements)
        else { return new }
        let carried = operation.remove.count + operation.insert.count + 1
        return carried < elements.count ? operation.jsonValue(\.self) : new
    }
}
