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
                let properties = entry.changedKeys.compactMap { key in
                    object.slotsByKey[key].map { (key, $0.modelValue) }
                }
                fragments.append(Self.fragment(isAdd: false, object: object, properties: properties))
                for key in entry.changedKeys {
                    if let original = entry.originalValues[key] {
                        touches.append(RecordedChangeSet.Touch(object: object, key: key, originalValue: original))
                    }
                }
            }
        }
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
}
