/// Coalesces local changes into at most one pending fragment per object for the current batch.
///
/// - add then change → one add (it is built from the newest values when the batch is taken);
/// - add then detach → nothing; change then detach → nothing;
/// - detach then re-attach in the same batch → the object's pending fragment comes back (a move keeps
///   its edits and an object the receiver already has gets no second add; the original lost them).
struct ChangeRecorder {
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
    private var detachedInBatch: [ObjectIdentifier: Pending?] = [:]

    var isEmpty: Bool { pending.isEmpty }

    mutating func attached(_ object: ModelObject) {
        let id = ObjectIdentifier(object)
        if let stashed = detachedInBatch.removeValue(forKey: id) {
            if let stashed { insert(stashed, id: id) }
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
            detachedInBatch[id] = .some(entry)
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
