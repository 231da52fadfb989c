import Foundation

extension ScopeState {
    /// The light mode's change-set check (`--light`): what a developer would write in an afternoon.
    /// It checks that the fragment's class exists, that a `change` names an object of that class in
    /// the scope (or added earlier in the set), that property names exist and that each value's
    /// JSON type fits (`PropertySpec.checkType`). It does not check ranges, enum values, lengths,
    /// duplicate adds, reference targets or reachability: keeping an added Shape in the root's
    /// `shapes` is left to the client. Shapes dropped from the root's `shapes` still leave the
    /// scope (listed in `removed`), as in the default mode.
    ///
    /// As in the default mode, a rejected set changes nothing: every fragment is checked before
    /// anything is applied.
    mutating func applyLightly(_ entries: [Result<FragmentRequest, FragmentError>]) -> ChangeSetOutcome {
        var errors = [FragmentError?](repeating: nil, count: entries.count)
        var plan = ChangeSetPlan()
        var addedClasses: [UUID: ModelClass] = [:]
        var newShapes: [UUID]?
        for (index, entry) in entries.enumerated() {
            let request: FragmentRequest
            switch entry {
            case .failure(let error):
                errors[index] = error
                continue
            case .success(let success):
                request = success
            }
            do throws(FragmentError) {
                let modelClass = try lightClass(of: request, addedClasses: addedClasses)
                var updates: [(index: Int, value: JSONValue)] = []
                updates.reserveCapacity(request.properties.count)
                for (key, value) in request.properties {
                    guard let propertyIndex = modelClass.propertyIndex(named: key) else {
                        throw FragmentError(
                            .unknownProperty, "\(modelClass.name) has no property '\(key)'", property: key)
                    }
                    try modelClass.properties[propertyIndex].checkType(value)
                    updates.append((propertyIndex, value))
                }
                // Schema order, so fragments list their properties as the default mode's do.
                updates.sort { $0.index < $1.index }
                if request.type == .add {
                    addedClasses[request.uuid] = modelClass
                } else if request.uuid == rootUUID, let shapes = shapeList(in: updates, of: modelClass) {
                    newShapes = shapes
                }
                plan.record(request.type, uuid: request.uuid, modelClass: modelClass, updates: updates)
            } catch {
                errors[index] = error
            }
        }
        if errors.contains(where: { $0 != nil }) {
            return .rejected(errors.map { FragmentReply(error: $0) })
        }
        if let newShapes {
            let kept = Set(newShapes)
            plan.removed = Set(objects[rootUUID]?.shapeReferences ?? []).subtracting(kept)
                .sorted { $0.wireString < $1.wireString }
        }
        commit(plan)
        return .accepted(
            AppliedChangeSet(version: version, fragments: plan.fragments, removed: plan.removed.map(\.wireString)))
    }

    /// The class whose properties a fragment is checked against: the named class for an `add`;
    /// for a `change`, the class of the object it names, which must be the named one.
    private func lightClass(
        of request: FragmentRequest, addedClasses: [UUID: ModelClass]
    ) throws(FragmentError) -> ModelClass {
        guard let modelClass = DemoSchema.modelClass(named: request.clsName) else {
            throw FragmentError(.unknownClass, "the schema has no class \(request.clsName)")
        }
        guard request.type == .change else { return modelClass }
        guard let existing = objects[request.uuid]?.modelClass ?? addedClasses[request.uuid] else {
            throw FragmentError(
                .unknownObject, "no object \(request.uuid.wireString) in the scope or earlier in the change set")
        }
        guard existing.name == modelClass.name else {
            throw FragmentError(
                .classMismatch, "\(request.uuid.wireString) is a \(existing.name), not a \(modelClass.name)")
        }
        return modelClass
    }

    /// The UUIDs of a `shapes` write among `updates`, nil when the fragment does not write it.
    /// Strings that are not UUIDs are kept in the value but reference nothing.
    private func shapeList(in updates: [(index: Int, value: JSONValue)], of modelClass: ModelClass) -> [UUID]? {
        guard let shapesIndex = modelClass.propertyIndex(named: "shapes"),
            let update = updates.last(where: { $0.index == shapesIndex }), case .array(let elements) = update.value
        else { return nil }
        return elements.compactMap { if case .string(let text) = $0 { UUID(uuidString: text) } else { nil } }
    }
}
