import Foundation
import HashTreeCollections
import JetstreamJSON

/// The state of one scope at one version: its objects by UUID, their parent relationships, the root.
///
/// A value type over persistent hash tries: copying is O(1), and a writer that builds the next
/// version copies only the paths it touches, so readers keep an immutable snapshot for free.
///
/// ```swift
/// var state = ScopeState(rootClass: Schema.demo.modelClass(named: "Canvas")!)
/// let outcome = state.applying(changeSet, schema: .demo)
/// if case .accepted(let applied) = outcome { state = applied.state }
/// ```
public struct ScopeState: Sendable, Hashable {
    /// Starts at 0 for a new scope; each accepted change set adds 1.
    public internal(set) var version: Int
    public let rootUUID: UUID
    var objects: TreeDictionary<UUID, ScopeObject>

    /// A new scope holding only a root with default values.
    public init(rootUUID: UUID = UUID(), rootClass: ModelClass, version: Int = 0) {
        self.version = version
        self.rootUUID = rootUUID
        self.objects = [rootUUID: ScopeObject(uuid: rootUUID, modelClass: rootClass)]
    }

    /// The number of objects, the root included.
    public var count: Int { objects.count }

    /// The root object (always present).
    public var root: ScopeObject { objects[rootUUID]! }

    /// The root object's class.
    public var rootClass: ModelClass { root.modelClass }

    /// The object `uuid`, or nil when the scope has none.
    public func object(_ uuid: UUID) -> ScopeObject? { objects[uuid] }

    /// Whether the scope holds the object `uuid`.
    public func contains(_ uuid: UUID) -> Bool { objects[uuid] != nil }

    /// Every object that refers to `uuid`, with the property, sorted by parent UUID then key; a
    /// parent that lists the object twice in one collection appears once.
    public func parents(of uuid: UUID) -> [ParentReference] {
        guard let object = objects[uuid] else { return [] }
        return object.parents.entries.compactMap { entry -> ParentReference? in
            guard let parent = objects[entry.ref.parent] else { return nil }
            return ParentReference(uuid: parent.uuid, key: parent.modelClass.properties[entry.ref.propertyIndex].name)
        }
        .sorted { ($0.uuid.wireString, $0.key) < ($1.uuid.wireString, $1.key) }
    }

    /// All objects in no particular order.
    public var allObjects: some Sequence<ScopeObject> { objects.values }

    /// `{"uuid","clsName","owner","properties","parents":[{"uuid","key"}]}` for one object, or nil
    /// (`owner` is `null` for an object added anonymously and for the root).
    public func objectJSON(_ uuid: UUID) -> JSONValue? {
        guard let object = objects[uuid] else { return nil }
        let parents: [JSONValue] = parents(of: uuid).map {
            ["uuid": .string($0.uuid.wireString), "key": .string($0.key)]
        }
        return [
            "uuid": .string(uuid.wireString), "clsName": .string(object.clsName),
            "owner": object.owner.map(JSONValue.string) ?? .null, "properties": .object(object.propertiesJSON),
            "parents": .array(parents),
        ]
    }

    /// Applies a change set all or nothing; `self` is never modified.
    ///
    /// Either `.accepted` with the next state (version + 1), the normalised fragments and the
    /// removed UUIDs, or `.rejected` with one reply per fragment.
    ///
    /// `author` is who writes it: the subject that becomes the owner of the objects the set adds,
    /// and the writer the schema's rules (`rules`, `write`, `immutable`) judge — a fragment they
    /// refuse is rejected with `forbidden` or `immutable`. The default is the server, which no rule
    /// binds (what is already accepted, replayed).
    public func applying(
        _ changeSet: ChangeSet, schema: Schema, limits: Limits = Limits(), author: ChangeAuthor = .server()
    ) -> ChangeSetOutcome {
        var applier = ChangeSetApplier(state: self, schema: schema, limits: limits, author: author)
        return applier.run(changeSet)
    }

    /// Applies fragments; see ``applying(_:schema:limits:author:)``.
    public func applying(
        _ fragments: [SyncFragment], schema: Schema, limits: Limits = Limits(), author: ChangeAuthor = .server()
    ) -> ChangeSetOutcome {
        applying(ChangeSet(fragments: fragments), schema: schema, limits: limits, author: author)
    }

    /// Applies a change set and, when it is accepted, replaces `self` with the new state.
    @discardableResult
    public mutating func apply(_ changeSet: ChangeSet, schema: Schema, limits: Limits = Limits()) -> ChangeSetOutcome {
        let outcome = applying(changeSet, schema: schema, limits: limits)
        if case .accepted(let applied) = outcome { self = applied.state }
        return outcome
    }
}

extension ScopeState {
    /// Writes `{"name","version","rootUUID","fragments":[…]}` (the same bytes as
    /// `stateJSON(name:).encoded()`) without building the intermediate tree.
    public func writeState(name: String, to writer: inout JSONWriter) {
        writer.writeRaw(#"{"name":"#)
        writer.write(string: name)
        writer.writeRaw(#","version":"#)
        writer.writeRaw(String(version))
        writer.writeRaw(#","rootUUID":""#)
        writer.writeRaw(rootUUID.wireString)
        writer.writeRaw(#"","fragments":["#)
        var first = true
        walkPreOrder { object in
            if !first { writer.writeRaw(",") }
            first = false
            object.writeFragment(isRoot: object.uuid == rootUUID, to: &writer)
        }
        writer.writeRaw("]}")
    }
}

extension ScopeState {
    /// The owner of every object that has one (objects added anonymously, and the root, have
    /// none): what a stored snapshot keeps beside its fragments, which carry no owners.
    public var owners: [UUID: String] {
        var owners: [UUID: String] = [:]
        for object in objects.values {
            if let owner = object.owner { owners[object.uuid] = owner }
        }
        return owners
    }

    /// The same objects with the owners `owners` names (a snapshot read back); objects it does not
    /// name keep theirs, UUIDs the scope lacks are ignored.
    public func withOwners(_ owners: [UUID: String]) -> ScopeState {
        var copy = self
        for (uuid, owner) in owners where copy.objects[uuid] != nil { copy.objects[uuid]!.owner = owner }
        return copy
    }
}

extension ScopeState {
    /// The same objects at another version number — for a store that assigns versions (a scope
    /// re-created after deletion continues numbering after its tombstone).
    ///
    /// ```swift
    /// let state = try ScopeState.create(rootClass: canvas, schema: schema).withVersion(43)
    /// ```
    public func withVersion(_ version: Int) -> ScopeState {
        var copy = self
        copy.version = version
        return copy
    }
}
