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
    /// Objects whose class the schema no longer has: never loaded, references to them dropped.
    private(set) var missingObjects: Set<UUID> = []
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
        }
        return fragments.compactMap { translate($0) }
    }

    private mutating func translate(_ fragment: SyncFragment) -> SyncFragment? {
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
        let cleaned = dropMissingReferences(from: value, of: definition)
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
            let clamped = definition.clamped(cleaned)
            return clamped.flatMap { definition.refusal(of: $0) == nil ? $0 : nil } ?? definition.defaultValue.jsonValue
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

    /// References to objects of removed classes leave collections and become `null` (a non-nullable
    /// one is then refused, and reported).
    private func dropMissingReferences(from value: JSONValue, of definition: PropertyDefinition) -> JSONValue {
        guard !missingObjects.isEmpty, definition.type.referencedClassName != nil else { return value }
        func isMissing(_ element: JSONValue) -> Bool {
            element.string.flatMap(UUID.init(wireString:)).map(missingObjects.contains) ?? false
        }
        switch value {
        case .string where isMissing(value):
            return .null
        case .array(let elements):
            return .array(elements.filter { !isMissing($0) })
        case .object(var operations):
            for key in ["insert", "remove"] {
                if case .array(let elements)? = operations[key] {
                    operations[key] = .array(elements.filter { !isMissing($0) })
                }
            }
            return .object(operations)
        default:
            return value
        }
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
        open = open.filter { entry in
            state.contains(entry.key.uuid) || (entry.key.property.isEmpty && entry.value.kind == .unknownClass)
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
