import JetstreamModel

/// Coalesces local changes into at most one pending fragment per object for the current batch.
///
/// - add then change → one add (it is built from the newest values when the batch is taken);
/// - add then detach → nothing; change then detach → nothing;
/// - detach then re-attach in the same batch → the object's pending fragment comes back, plus the
///   properties changed while it was out (a move keeps its edits and an object the receiver already
///   has gets no second add; the original lost those edits).
struct ChangeRecorder {
    /// What a locally detached object had pending, and its synced values when it left (changes
    /// while it is out of the scope are not recorded, so re-attaching compares against these).
    struct Stash {
        var pending: Pending?
        var valuesAtDetach: [String: (model: JetstreamModel.Value, value: Any)]
    }

    struct Pending {
        let object: ModelObject
        var isAdd: Bool
        /// Changed keys in first-change order.
        var changedKeys: [String] = []
        /// The value each key had before the batch: what a revert restores.
        var originalValues: [String: Any] = [:]
    }

    private var order: [ObjectIdentifier] = []
    private var pending: [ObjectIdentifier: Pending] = [:]
    /// Objects detached during this batch, with the fragment they had pending (nil: none).
    private var detachedInBatch: [ObjectIdentifier: Stash] = [:]

    var isEmpty: Bool { pending.isEmpty }

    mutating func attached(_ object: ModelObject) {
        let id = ObjectIdentifier(object)
        if let stash = detachedInBatch.removeValue(forKey: id) {
            var entry = stash.pending ?? Pending(object: object, isAdd: false)
            if !entry.isAdd {
                for slot in object.slots where slot.isSynced && entry.originalValues[slot.key] == nil {
                    guard let atDetach = stash.valuesAtDetach[slot.key], atDetach.model != slot.modelValue else {
                        continue
                    }
                    entry.changedKeys.append(slot.key)
                    entry.originalValues[slot.key] = atDetach.value
                }
            }
            if entry.isAdd || !entry.changedKeys.isEmpty {
                insert(entry, id: id)
            }
            return
        }
        guard pending[id] == nil else { return }
        insert(Pending(object: object, isAdd: true), id: id)
    }

    mutating func changed(_ object: ModelObject, key: String, oldValue: Any) {
        let id = ObjectIdentifier(object)
        var entry = pending[id] ?? Pending(object: object, isAdd: false)
        if pending[id] == nil {
            order.append(id)
        }
        if !entry.isAdd && entry.originalValues[key] == nil {
            entry.changedKeys.append(key)
            entry.originalValues[key] = oldValue
        }
        pending[id] = entry
    }

    /// `byRemote`: the receiver no longer has the object either, so a later re-attach is a new add.
    mutating func detached(_ object: ModelObject, byRemote: Bool) {
        let id = ObjectIdentifier(object)
        let entry = pending.removeValue(forKey: id)
        if byRemote {
            detachedInBatch[id] = nil
        } else if detachedInBatch[id] == nil {
            var values: [String: (model: JetstreamModel.Value, value: Any)] = [:]
            if entry?.isAdd != true {
                for slot in object.slots where slot.isSynced {
                    values[slot.key] = (slot.modelValue, slot.anyValue)
                }
            }
            detachedInBatch[id] = Stash(pending: entry, valuesAtDetach: values)
        }
    }

    /// The batch's fragments in first-touch order (empty changes dropped); starts a new batch.
    mutating func takeBatch() -> [Pending] {
        var seen: Set<ObjectIdentifier> = []
        let batch = order.compactMap { id -> Pending? in
            guard seen.insert(id).inserted, let entry = pending[id] else { return nil }
            return entry.isAdd || !entry.changedKeys.isEmpty ? entry : nil
        }
        order = []
        pending = [:]
        detachedInBatch = [:]
        return batch
    }

    private mutating func insert(_ entry: Pending, id: ObjectIdentifier) {
        pending[id] = entry
        order.append(id)
    }
}
