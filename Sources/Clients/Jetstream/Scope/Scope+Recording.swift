import JetstreamModel

extension Scope {
    func recordAttach(of object: ModelObject) {
        guard isRecording, object !== root else { return }
        recorder.attached(object)
        requestFlush()
    }

    func recordChange(of object: ModelObject, key: String, oldValue: Any) {
        guard isRecording else { return }
        recorder.changed(object, key: key, oldValue: oldValue)
        requestFlush()
    }

    func recordDetach(of object: ModelObject) {
        recorder.detached(object, byRemote: !isRecording)
    }

    /// Ends the current batch: its coalesced fragments as a change set, or nil when nothing changed.
    func takeChangeSet(isAtomic: Bool) -> RecordedChangeSet? {
        let batch = recorder.takeBatch()
        guard !batch.isEmpty else { return nil }
        var fragments: [SyncFragment] = []
        var touches: [RecordedChangeSet.Touch] = []
        for entry in batch {
            let object = entry.object
            if entry.isAdd {
                let properties = object.slots.filter(\.isSynced).map { ($0.key, $0.modelValue) }
                fragments.append(Self.fragment(isAdd: true, object: object, properties: properties))
            } else {
                if let fragment = Self.changeFragment(of: entry) { fragments.append(fragment) }
                for key in entry.changedKeys {
                    if let original = entry.originalValues[key] {
                        touches.append(RecordedChangeSet.Touch(object: object, key: key, originalValue: original))
                    }
                }
            }
        }
        // Collections that ended where they started leave nothing to send.
        guard !fragments.isEmpty else { return nil }
        return RecordedChangeSet(fragments: fragments, isAtomic: isAtomic, scope: self, touches: touches)
    }

    static func fragment(
        isAdd: Bool, object: ModelObject, properties: [(String, JetstreamModel.Value)]
    ) -> SyncFragment {
        var json = JSONObject()
        json.reserveCapacity(properties.count)
        for (key, value) in properties {
            json.appendUnchecked(key: key, value: value.jsonValue)
        }
        return SyncFragment(
            type: isAdd ? .add : .change, uuid: object.uuid, clsName: type(of: object).className, properties: json)
    }

    /// The `change` fragment of one object's batch (nil when nothing is left to send): scalars with
    /// their final values, each changed collection as one value — the one operations object that
    /// turns the batch's original value into the final one (so concurrent writers keep each other's
    /// elements), or the whole array when the edit is at several places and that is shorter to send,
    /// or when the final value holds a value twice (see ``collectionValue(from:to:)``). A collection
    /// that ends where it started is left out. One value per property is all the wire format allows in a fragment, and one
    /// fragment per object per batch keeps the server's work to one pass over the collection.
    static func changeFragment(of entry: ChangeRecorder.Pending) -> SyncFragment? {
        let object = entry.object
        var properties = JSONObject()
        for key in entry.changedKeys {
            guard let slot = object.slotsByKey[key] else { continue }
            let current = slot.modelValue
            if let newElements = current.collectionElements,
                let oldElements = entry.originalValues[key].flatMap(slot.modelValue(of:))?.collectionElements
            {
                guard newElements != oldElements else { continue }
                properties.appendUnchecked(key: key, value: collectionValue(from: oldElements, to: current))
                continue
            }
            properties.appendUnchecked(key: key, value: current.jsonValue)
        }
        guard !properties.isEmpty else { return nil }
        return SyncFragment(
            type: .change, uuid: object.uuid, clsName: type(of: object).className, properties: properties)
    }

    /// What a `change` carries for a collection that went from `old` to `new`: its one operations
    /// object (``JetstreamModel/CollectionOperation/singleOperation(from:to:)``: the diff's object
    /// for an edit at one place, the middle between the shared prefix and suffix for several),
    /// always — a whole array would erase values another writer inserted meanwhile
    /// (docs/sync-protocol.md, L3). Only a new value that holds a value twice goes whole
    /// (operations cannot build it).
    static func collectionValue(from old: [JetstreamModel.Value], to new: JetstreamModel.Value) -> JSONValue {
        guard let newElements = new.collectionElements,
            let operation = CollectionOperation.singleOperation(from: old, to: newElements)
        else { return new.jsonValue }
        return operation.jsonValue
    }
}
