import Foundation
import JetstreamJSON

/// Loads what one scope stored under an earlier schema into the current one, fragment by fragment
/// as its snapshot and log are read, so the stored log is never rewritten: a renamed property
/// (`renamedFrom`) carries its value over, a property the schema no longer has is dropped, and a
/// value the property now refuses is fixed as its `onInvalid` says — or, without one, recorded as
/// a ``StoredValueProblem`` (the property's default stands in, so that the rest is still read and
/// the report names every problem, not the first).
///
/// A value fixed later by the log clears its problem, and an object that is gone by the end takes
/// its problems with it (``finish(_:schema:)``): what remains describes the current state only.
///
/// ```swift
/// var translation = StoredDataTranslation(schema: newSchema)
/// var state = try ScopeState(importing: translation.translate(snapshotFragments), …)
/// for logged in tail { state = state.applying(ChangeSet(fragments: translation.translate(logged)), …) }
/// state = try translation.finish(state, schema: newSchema)
/// translation.problems   // empty: the new schema fits
/// ```
public struct StoredDataTranslation: Sendable {
    let schema: Schema
    /// Open problems, by object and property ("" for the class).
    private var open: [ProblemKey: StoredValueProblem] = [:]
    /// Objects never loaded: their class is gone, or a fix cut them loose (a collection of
    /// references cut to `maxCount`). References to them are dropped, and so are their fragments.
    private(set) var missingObjects: Set<UUID> = []
    /// Objects of classes the schema no longer has.
    private var missingClassObjects: Set<UUID> = []
    /// For each property of a loaded object, the missing objects its stored value refers to: an
    /// object of a removed class still referred to at the end is in the current state (reported);
    /// one no longer referred to is history (not reported).
    private var missingReferences: [ProblemKey: Set<UUID>] = [:]
    /// Whether the batch being translated dropped a reference (so an add may be left unattached).
    private var droppedReference = false
    /// Objects a value of which asked for `remove-object`.
    private(set) var removals: Set<UUID> = []
    /// How many stored values `onInvalid` fixed.
    public private(set) var fixedValues = 0
    /// Whether any fragment read so far needed a change.
    public private(set) var changedAnything = false

    struct ProblemKey: Hashable {
        let uuid: UUID
        let property: String
    }

    public init(schema: Schema) {
        self.schema = schema
    }

    /// The problems left, by object then property.
    public var problems: [StoredValueProblem] {
        open.values.sorted { ($0.uuid.wireString, $0.property ?? "") < ($1.uuid.wireString, $1.property ?? "") }
    }

    /// `fragments` as the current schema reads them (the same values when nothing needed a change).
    public mutating func translate(_ fragments: [SyncFragment]) -> [SyncFragment] {
        // Objects of removed classes first: a parent in the same batch may list one before its add.
        for fragment in fragments where schema.modelClass(named: fragment.clsName) == nil {
            missingObjects.insert(fragment.uuid)
            missingClassObjects.insert(fragment.uuid)
            droppedReference = true
        }
        let translated = fragments.compactMap { translate($0) }
        guard droppedReference else { return translated }
        droppedReference = false
        return droppingLooseAdds(translated, original: fragments)
    }

    /// Without the references a fix dropped (or those to objects of removed classes), objects the
    /// batch adds may no longer be attached to anything: they are cut loose too, with whatever only
    /// they referred to, rather than refused as unattached.
    private mutating func droppingLooseAdds(_ translated: [SyncFragment], original: [SyncFragment]) -> [SyncFragment] {
        let referencedBefore = Self.referencedUUIDs(in: original)
        var kept = translated
        while true {
            let referenced = Self.referencedUUIDs(in: kept)
            let loose = Set(
                kept.lazy.filter {
                    $0.type == .add && referencedBefore.contains($0.uuid) && !referenced.contains($0.uuid)
                }
                .map(\.uuid))
            guard !loose.isEmpty else { return kept }
            missingObjects.formUnion(loose)
            kept.removeAll { loose.contains($0.uuid) }
        }
    }

    /// Every UUID the fragments' values name (references, in arrays, operations or alone).
    private static func referencedUUIDs(in fragments: [SyncFragment]) -> Set<UUID> {
        var found: Set<UUID> = []
        func collect(_ value: JSONValue) {
            switch value {
            case .string(let text): if let uuid = UUID(wireString: text) { found.insert(uuid) }
            case .array(let elements): elements.forEach(collect)
            case .object(let object): object.forEach { collect($0.value) }
            default: break
            }
        }
        for fragment in fragments { fragment.properties.forEach { collect($0.value) } }
        return found
    }

    private mutating func translate(_ fragment: SyncFragment) -> SyncFragment? {
        if missingObjects.contains(fragment.uuid) && !missingClassObjects.contains(fragment.uuid) {
            // Cut loose earlier: it never loaded, so neither does a change to it.
            changedAnything = true
            return nil
        }
        guard let modelClass = schema.modelClass(named: fragment.clsName) else {
            changedAnything = true
            open[ProblemKey(uuid: fragment.uuid, property: "")] = StoredValueProblem(
                uuid: fragment.uuid, className: fragment.clsName, property: nil, value: nil, kind: .unknownClass,
                reason: "the schema has no class \(fragment.clsName)")
            return nil
        }
        var properties = JSONObject()
        var changed = false
        for member in fragment.properties {
            guard let definition = definition(for: member.key, in: modelClass, stored: fragment.properties) else {
                changed = true
                continue
            }
            if definition.name != member.key { changed = true }
            let value = load(member.value, as: definition, of: fragment, in: modelClass)
            if value != member.value { changed = true }
            properties.appendUnchecked(key: definition.name, value: value)
        }
        guard changed else { return fragment }
        changedAnything = true
        var translated = fragment
        translated.properties = properties
        return translated
    }

    /// The property a stored key loads into: its own, or the one renamed from it when the stored
    /// object has no value under the new name; nil when the schema dropped it.
    private func definition(
        for key: String, in modelClass: ModelClass, stored: JSONObject
    ) -> PropertyDefinition? {
        if let definition = modelClass.property(named: key) { return definition }
        guard let renamed = modelClass.properties.first(where: { $0.renamedFrom == key }),
            stored[renamed.name] == nil
        else { return nil }
        return renamed
    }

    /// One stored value under `definition`: as stored when it fits, else fixed or recorded.
    private mutating func load(
        _ value: JSONValue, as definition: PropertyDefinition, of fragment: SyncFragment, in modelClass: ModelClass
    ) -> JSONValue {
        let key = ProblemKey(uuid: fragment.uuid, property: definition.name)
        let cleaned = dropMissingReferences(from: value, of: definition, holder: key)
        let loaded = fitting(cleaned, stored: value, as: definition, of: fragment, in: modelClass)
        if definition.type.referencedClassName != nil, loaded != cleaned { droppedReference = true }
        return loaded
    }

    /// `value` when `definition` accepts it, else what its `onInvalid` makes of it (or its default,
    /// the refusal recorded).
    private mutating func fitting(
        _ cleaned: JSONValue, stored value: JSONValue, as definition: PropertyDefinition, of fragment: SyncFragment,
        in modelClass: ModelClass
    ) -> JSONValue {
        let key = ProblemKey(uuid: fragment.uuid, property: definition.name)
        guard let error = definition.refusal(of: cleaned) else {
            open[key] = nil
            return cleaned
        }
        switch definition.onInvalid {
        case .default?:
            fixedValues += 1
            return definition.defaultValue.jsonValue
        case .clamp?:
            fixedValues += 1
            // Spelled out: `nil` alone would be JSON's null (JSONValue is nil-literal expressible).
            let fitting: JSONValue? = definition.clamped(cleaned).flatMap { clamped -> JSONValue? in
                definition.refusal(of: clamped) == nil ? clamped : Optional<JSONValue>.none
            }
            return fitting ?? definition.defaultValue.jsonValue
        case .null?:
            fixedValues += 1
            return .null
        case .removeObject?:
            fixedValues += 1
            removals.insert(fragment.uuid)
            return definition.defaultValue.jsonValue
        case nil:
            open[key] = StoredValueProblem(
                uuid: fragment.uuid, className: modelClass.name, property: definition.name, value: value,
                kind: error.kind, reason: error.message)
            return definition.defaultValue.jsonValue
        }
    }

    /// References to missing objects leave collections and become `null` (a non-nullable one is
    /// then refused, and reported); which ones `holder` held is kept for ``finish(_:schema:)``.
    private mutating func dropMissingReferences(
        from value: JSONValue, of definition: PropertyDefinition, holder: ProblemKey
    ) -> JSONValue {
        guard !missingObjects.isEmpty, definition.type.referencedClassName != nil else { return value }
        let missing = missingObjects
        func missingUUID(_ element: JSONValue) -> UUID? {
            element.string.flatMap(UUID.init(wireString:)).flatMap { missing.contains($0) ? $0 : nil }
        }
        var held = missingReferences[holder] ?? []
        let cleaned: JSONValue
        switch value {
        case .string:
            held = Set([missingUUID(value)].compactMap { $0 })
            cleaned = held.isEmpty ? value : .null
        case .array(let elements):
            held = Set(elements.compactMap(missingUUID))
            cleaned = .array(elements.filter { missingUUID($0) == nil })
        case .object(var operations):
            if case .array(let removed)? = operations["remove"] {
                held.subtract(removed.compactMap(missingUUID))
                operations["remove"] = .array(removed.filter { missingUUID($0) == nil })
            }
            if case .array(let inserted)? = operations["insert"] {
                held.formUnion(inserted.compactMap(missingUUID))
                operations["insert"] = .array(inserted.filter { missingUUID($0) == nil })
            }
            cleaned = .object(operations)
        default:
            held = []
            cleaned = value
        }
        missingReferences[holder] = held.isEmpty ? nil : held
        return cleaned
    }
}

extension StoredDataTranslation {
    /// The loaded state once every fragment was read: the objects `remove-object` asked for leave
    /// it (references to them become `null`, collections drop them, in one more step of the same
    /// version), and problems of objects no longer in it are forgotten.
    public mutating func finish(_ state: ScopeState, schema: Schema) -> ScopeState {
        var state = state
        let leaving = removals.filter { state.contains($0) && $0 != state.rootUUID }
        if !leaving.isEmpty {
            var fragments: [SyncFragment] = []
            for uuid in leaving.sorted(by: { $0.wireString < $1.wireString }) {
                for parent in state.parents(of: uuid) where !leaving.contains(parent.uuid) {
                    if let fragment = detaching(uuid, from: parent, in: state, leaving: leaving) {
                        fragments.append(fragment)
                    }
                }
            }
            if case .accepted(let applied) = state.applying(fragments, schema: schema, limits: .unlimited) {
                state = applied.state.withVersion(state.version)
            }
        }
        if removals.contains(state.rootUUID) {
            open[ProblemKey(uuid: state.rootUUID, property: "")] = StoredValueProblem(
                uuid: state.rootUUID, className: state.rootClass.name, property: nil, value: nil,
                kind: .constraintViolation, reason: "onInvalid: remove-object cannot remove the scope's root")
        }
        // An object of a removed class is in the current state while a loaded object refers to it.
        var heldMissing: Set<UUID> = []
        for (holder, uuids) in missingReferences where state.contains(holder.uuid) { heldMissing.formUnion(uuids) }
        open = open.filter { entry in
            entry.value.kind == .unknownClass && entry.key.property.isEmpty
                ? heldMissing.contains(entry.key.uuid) : state.contains(entry.key.uuid)
        }
        return state
    }

    /// The change to `parent` that lets go of `uuid`: the collection without it, or `null`.
    private mutating func detaching(
        _ uuid: UUID, from parent: ParentReference, in state: ScopeState, leaving: Set<UUID>
    ) -> SyncFragment? {
        guard let object = state.object(parent.uuid), let definition = object.modelClass.property(named: parent.key)
        else { return nil }
        let value: JSONValue
        if case .references(let uuids)? = object[parent.key] {
            value = .array(uuids.filter { !leaving.contains($0) }.map { .string($0.wireString) })
        } else if definition.isNullable {
            value = .null
        } else {
            open[ProblemKey(uuid: parent.uuid, property: parent.key)] = StoredValueProblem(
                uuid: parent.uuid, className: object.clsName, property: parent.key, value: .string(uuid.wireString),
                kind: .nullNotAllowed,
                reason: "refers to \(uuid.wireString), which onInvalid: remove-object removes, and is not nullable")
            return nil
        }
        return SyncFragment(
            type: .change, uuid: parent.uuid, clsName: object.clsName, properties: [parent.key: value])
    }
}
