import Foundation
import JetstreamJSON

extension ScopeState {
    /// Fragments that turn this state into `new` (its version aside): an `add` with every property
    /// for an object only `new` has, a `change` of the differing properties (whole values) for one
    /// both have. Objects only this state has are not named: they leave by reachability once the
    /// references to them are written. `candidates` limits the objects compared (all of `new`'s
    /// when nil); the fragments are in UUID order, adds first, so equal inputs give equal bytes.
    ///
    /// A server restores a past state with it (the difference from the current one); a client
    /// tells its observers what a rebase changed.
    ///
    /// ```swift
    /// let fragments = current.difference(to: past)   // [] when nothing differs
    /// ```
    public func difference(to new: ScopeState, among candidates: Set<UUID>? = nil) -> [SyncFragment] {
        var adds: [SyncFragment] = []
        var changes: [SyncFragment] = []
        let compared = candidates.map(Array.init) ?? new.allObjects.map(\.uuid)
        for uuid in compared.sorted(by: { $0.wireString < $1.wireString }) {
            guard let now = new.object(uuid) else { continue }
            guard let then = object(uuid), then.clsName == now.clsName else {
                adds.append(SyncFragment(type: .add, uuid: uuid, clsName: now.clsName, properties: now.propertiesJSON))
                continue
            }
            guard then.values != now.values else { continue }
            var properties = JSONObject()
            for (index, property) in now.modelClass.properties.enumerated()
            where then.values[index] != now.values[index] {
                properties.appendUnchecked(key: property.name, value: now.values[index].jsonValue)
            }
            changes.append(SyncFragment(type: .change, uuid: uuid, clsName: now.clsName, properties: properties))
        }
        return adds + changes
    }

    /// The objects this state has and `new` has not.
    public func objectsMissing(from new: ScopeState) -> [UUID] {
        allObjects.map(\.uuid).filter { !new.contains($0) }.sorted { $0.wireString < $1.wireString }
    }
}
