import Foundation
import JetstreamModel

extension Scope {
    /// The schema remote fragments are validated against: the one given at init, or the one the
    /// model classes produce.
    public func schema() throws(ScopeApplyError) -> Schema {
        if let providedSchema { return providedSchema }
        do {
            let schema = try modelTypes.schema(
                scopePattern: name.isEmpty ? "*" : name, rootClassName: type(of: root).className)
            providedSchema = schema
            return schema
        } catch {
            throw .invalidSchema(error)
        }
    }

    /// The scope as the model core sees it (the full state `GET` would return for these objects).
    ///
    /// - Throws: ``ScopeApplyError/invalidLocalState(_:)`` when a local write broke the schema.
    public func currentState() throws(ScopeApplyError) -> ScopeState {
        if let stateMirror { return stateMirror }
        let schema = try schema()
        let fragments = objects.map { object in
            Self.fragment(
                isAdd: object !== root, object: object,
                properties: object.slots.filter(\.isSynced).map { ($0.key, $0.modelValue) })
        }
        do {
            let state = try ScopeState(importing: fragments, rootUUID: root.uuid, version: 0, schema: schema)
            stateMirror = state
            return state
        } catch {
            throw .invalidLocalState(error)
        }
    }

    /// Applies fragments from elsewhere (the gateway's stream) all or nothing, with the model core's
    /// strict validation (the gateway's own rules); they are not recorded as local changes.
    /// Observers fire as for local changes; queued ones have run when this returns.
    ///
    /// ```swift
    /// let fragments = try event.fragments.map(SyncFragment.init(json:))
    /// try scope.applySyncFragments(fragments)
    /// ```
    /// - Returns: the model core's result: normalised fragments and the UUIDs that left the scope.
    /// - Throws: ``ScopeApplyError/rejected(_:)`` with one reply per fragment when any is invalid
    ///   for the current local state; nothing changes then.
    @discardableResult
    public func applySyncFragments(_ fragments: [SyncFragment]) throws(ScopeApplyError) -> AppliedChangeSet {
        let base = try currentState()
        let applied: AppliedChangeSet
        switch base.applying(fragments, schema: try schema(), limits: limits) {
        case .rejected(let replies): throw .rejected(replies)
        case .accepted(let accepted): applied = accepted
        }
        try applyTyped(
            addedUUIDs: applied.fragments.filter { $0.type == .add }.map(\.uuid),
            touched: applied.fragments.map(\.uuid), state: applied.state)
        return applied
    }

    /// Replaces the local tree with a full state (`rootUUID` plus pre-order fragments, as `GET` and
    /// the SSE `snapshot` carry it): the root adopts `rootUUID`, objects missing from the state leave
    /// the scope, missing properties take their defaults. Not recorded as local changes; setting
    /// equal values notifies nobody, so re-applying the same state is silent. Local changes not yet
    /// delivered to ``onChanges(_:)`` are dropped: the state supersedes them.
    ///
    /// ```swift
    /// try scope.applyFullState(fragments, rootUUID: rootUUID)
    /// ```
    public func applyFullState(
        _ fragments: [SyncFragment], rootUUID: UUID, version: Int = 0
    )
        throws(ScopeApplyError)
    {
        let schema = try schema()
        let state: ScopeState
        do {
            state = try ScopeState(importing: fragments, rootUUID: rootUUID, version: version, schema: schema)
        } catch {
            throw .invalidState(error)
        }
        guard state.root.clsName == type(of: root).className else {
            throw .invalidState(
                StateImportError(
                    fragmentIndex: nil,
                    message: "the state's root is a \(state.root.clsName), this scope's a \(type(of: root).className)"))
        }
        recorder = ChangeRecorder()
        changeUUID(of: root, to: rootUUID)
        let order = state.preOrderUUIDs()
        let added = order.filter { uuid in
            guard let local = objectsByUUID[uuid] else { return true }
            return type(of: local).className != state.object(uuid)?.clsName
        }
        try applyTyped(addedUUIDs: added, touched: order, state: state)
    }

    /// Mirrors an accepted state onto the typed objects: creates the added objects, then writes the
    /// touched objects' properties from `state` (final values, so fragment order does not matter).
    private func applyTyped(addedUUIDs: [UUID], touched: [UUID], state: ScopeState) throws(ScopeApplyError) {
        var created: [UUID: ModelObject] = [:]
        for uuid in addedUUIDs {
            guard let stateObject = state.object(uuid) else { continue }
            guard let type = modelTypes.type(named: stateObject.clsName) else {
                throw .unknownSwiftClass(stateObject.clsName)
            }
            let object = type.init()
            object.uuid = uuid
            created[uuid] = object
        }
        let resolve: (UUID) -> ModelObject? = { [unowned self] uuid in created[uuid] ?? objectsByUUID[uuid] }
        withoutRecording {
            withDeferredSweep {
                var seen: Set<UUID> = []
                for uuid in touched where seen.insert(uuid).inserted {
                    guard let stateObject = state.object(uuid), let object = created[uuid] ?? objectsByUUID[uuid]
                    else { continue }
                    for (property, value) in zip(stateObject.modelClass.properties, stateObject.values) {
                        guard let slot = object.slotsByKey[property.name], slot.isSynced else { continue }
                        slot.setModelValue(value, resolve: resolve, on: object)
                    }
                }
            }
        }
        stateMirror = state
        flush()
    }
}

/// Why remote fragments or a full state could not be applied to a ``Scope``. Nothing changed.
public enum ScopeApplyError: Error, CustomStringConvertible {
    /// The model core rejected the change set: one reply per fragment, at least one an error.
    case rejected([FragmentReply])
    /// The full state is not a valid state of this scope's schema.
    case invalidState(StateImportError)
    /// The model classes do not form a valid schema.
    case invalidSchema(SchemaError)
    /// The local objects do not satisfy the schema (a local write broke a constraint), so there is
    /// no valid state to apply the fragments to.
    case invalidLocalState(StateImportError)
    /// The schema has a class that no Swift type of this scope implements.
    case unknownSwiftClass(String)

    public var description: String {
        switch self {
        case .rejected(let replies):
            let errors = replies.enumerated().compactMap { index, reply in
                reply.error.map { "fragment \(index): \($0)" }
            }
            return "change set rejected: " + errors.joined(separator: "; ")
        case .invalidState(let error): return "invalid full state: \(error)"
        case .invalidSchema(let error): return "invalid schema: \(error)"
        case .invalidLocalState(let error): return "the local objects violate the schema: \(error)"
        case .unknownSwiftClass(let name): return "no Swift model class for '\(name)' in this scope"
        }
    }
}

extension Scope {
    /// Takes `state` as the model core's view of these objects without rebuilding it: a sync client
    /// that validated every local change against its own copy of the state hands that copy over,
    /// so the next remote application costs what it touches instead of a walk over every object.
    /// The caller guarantees that `state` is what ``currentState()`` would build.
    package func adoptState(_ state: ScopeState) {
        stateMirror = state
    }

    /// Validates remote fragments against `schema` from now on (the server's `GET /v1/schema`),
    /// instead of the one given at init or generated from the model classes.
    package func adoptSchema(_ schema: Schema) {
        providedSchema = schema
        stateMirror = nil
    }
}
