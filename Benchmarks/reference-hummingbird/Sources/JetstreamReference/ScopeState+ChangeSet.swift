import Foundation

extension ScopeState {
    /// Validates a change set and, when every fragment passes, applies it as one step and bumps
    /// the version. A rejected set leaves the state untouched.
    mutating func apply(_ entries: [Result<FragmentRequest, FragmentError>]) -> ChangeSetOutcome {
        switch plan(entries) {
        case .failure(let rejection):
            return .rejected(rejection.replies)
        case .success(let plan):
            commit(plan)
            return .accepted(
                AppliedChangeSet(version: version, fragments: plan.fragments, removed: plan.removed.map(\.wireString)))
        }
    }

    private struct Rejection: Error {
        let replies: [FragmentReply]
    }

    private func plan(_ entries: [Result<FragmentRequest, FragmentError>]) -> Result<ChangeSetPlan, Rejection> {
        var errors = [FragmentError?](repeating: nil, count: entries.count)
        // Pass 1: the objects this set adds, so fragments may reference them in any order.
        var adds: [UUID: (index: Int, modelClass: ModelClass)] = [:]
        for (index, entry) in entries.enumerated() {
            switch entry {
            case .failure(let error):
                errors[index] = error
            case .success(let request) where request.type == .add:
                guard let modelClass = DemoSchema.modelClass(named: request.clsName) else {
                    errors[index] = FragmentError(.unknownClass, "the schema has no class \(request.clsName)")
                    continue
                }
                guard modelClass.name != DemoSchema.canvas.name else {
                    // Nothing references a Canvas, so only the root can be one.
                    errors[index] = FragmentError(.unknownClass, "a scope rooted at Canvas cannot hold another Canvas")
                    continue
                }
                if let earlier = adds[request.uuid] {
                    errors[index] = FragmentError(
                        .duplicateAdd, "\(request.uuid.wireString) is already added by fragment \(earlier.index)")
                } else if objects[request.uuid] != nil {
                    errors[index] = FragmentError(.duplicateAdd, "an object \(request.uuid.wireString) already exists")
                } else {
                    adds[request.uuid] = (index, modelClass)
                }
            case .success:
                break
            }
        }
        let className: (UUID) -> String? = { uuid in
            objects[uuid]?.modelClass.name ?? adds[uuid]?.modelClass.name
        }

        // Pass 2: every fragment's properties, in order.
        var plan = ChangeSetPlan()
        var newShapes: [UUID]?
        for (index, entry) in entries.enumerated() where errors[index] == nil {
            guard case .success(let request) = entry else { continue }
            let modelClass: ModelClass
            if let existing = objects[request.uuid] {
                modelClass = existing.modelClass
            } else if let add = adds[request.uuid], add.index <= index {
                modelClass = add.modelClass
            } else {
                errors[index] = FragmentError(
                    .unknownObject, "no object \(request.uuid.wireString) in the scope or earlier in the change set")
                continue
            }
            guard modelClass.name == request.clsName else {
                errors[index] = FragmentError(
                    .classMismatch, "\(request.uuid.wireString) is a \(modelClass.name), not a \(request.clsName)")
                continue
            }
            var updates: [(index: Int, value: JSONValue)] = []
            do throws(FragmentError) {
                for (key, value) in request.properties {
                    guard let propertyIndex = modelClass.propertyIndex(named: key) else {
                        throw FragmentError(
                            .unknownProperty, "\(modelClass.name) has no property '\(key)'", property: key)
                    }
                    let normalised = try modelClass.properties[propertyIndex].validate(value, className: className)
                    updates.append((propertyIndex, normalised))
                }
            } catch {
                errors[index] = error
                continue
            }
            updates.sort { $0.index < $1.index }
            if request.uuid == rootUUID, let shapesIndex = modelClass.propertyIndex(named: "shapes"),
                let update = updates.last(where: { $0.index == shapesIndex }), case .array(let elements) = update.value
            {
                newShapes = elements.compactMap {
                    if case .string(let text) = $0 { UUID(uuidString: text) } else { nil }
                }
            }
            plan.record(request.type, uuid: request.uuid, modelClass: modelClass, updates: updates)
        }
        if errors.contains(where: { $0 != nil }) {
            return .failure(Rejection(replies: errors.map { FragmentReply(error: $0) }))
        }

        // Reachability: in the demo schema only the root's `shapes` references anything, so an
        // object is in the scope exactly when the root lists it.
        if newShapes != nil || !adds.isEmpty {
            let currentShapes = objects[rootUUID]?.shapeReferences ?? []
            let reachable = Set(newShapes ?? currentShapes)
            for (uuid, add) in adds where !reachable.contains(uuid) {
                errors[add.index] = FragmentError(
                    .unattachedAdd, "the added \(add.modelClass.name) is not reachable from the root")
            }
            if errors.contains(where: { $0 != nil }) {
                return .failure(Rejection(replies: errors.map { FragmentReply(error: $0) }))
            }
            if newShapes != nil {
                plan.removed = Set(currentShapes).subtracting(reachable).sorted { $0.wireString < $1.wireString }
            }
        }
        return .success(plan)
    }

    /// Applies a plan that passed its mode's checks (`apply` here, `applyLightly` in light mode)
    /// and bumps the version.
    mutating func commit(_ plan: ChangeSetPlan) {
        for object in plan.added {
            objects[object.uuid] = object
        }
        for change in plan.changes {
            for update in change.values {
                objects[change.uuid]?.values[update.index] = update.value
            }
        }
        for uuid in plan.removed {
            objects[uuid] = nil
        }
        version += 1
    }
}
