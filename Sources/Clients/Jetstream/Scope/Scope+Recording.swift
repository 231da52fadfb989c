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
                fragments += Self.changeFragments(of: entry)
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

    /// The `change` fragment of one object's batch: scalars with their final values, collections as
    /// the operations that turn the batch's original value into the final one (so concurrent
    /// writers keep each other's elements). A collection edit that needs several operations
    /// objects (inserts at several places) adds one more `change` per further object, right after;
    /// a collection that ends where it started is left out, and a fragment left empty is dropped.
    /// A collection that ends holding a value twice goes as the whole array (operations cannot
    /// express duplicates).
    static func changeFragments(of entry: ChangeRecorder.Pending) -> [SyncFragment] {
        let object = entry.object
        let clsName = type(of: object).className
        var properties = JSONObject()
        var further: [SyncFragment] = []
        for key in entry.changedKeys {
            guard let slot = object.slotsByKey[key] else { continue }
            let current = slot.modelValue
            if let newElements = current.collectionElements,
                let oldElements = entry.originalValues[key].flatMap(slot.modelValue(of:))?.collectionElements,
                let operations = CollectionOperation.operations(from: oldElements, to: newElements)
            {
                guard let first = operations.first else { continue }
                properties.appendUnchecked(key: key, value: first.jsonValue)
                for operation in operations.dropFirst() {
                    further.append(
                        SyncFragment(
                            type: .change, uuid: object.uuid, clsName: clsName,
                            properties: JSONObject([JSONObject.Member(key: key, value: operation.jsonValue)])))
                }
                continue
            }
            properties.appendUnchecked(key: key, value: current.jsonValue)
        }
        guard !properties.isEmpty else { return [] }
        return [SyncFragment(type: .change, uuid: object.uuid, clsName: clsName, properties: properties)] + further
    }
}
