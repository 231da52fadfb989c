import Foundation
import HashTreeCollections
import JetstreamJSON

extension ScopeState {
    /// The full state as fragments, in pre-order from the root (properties in declaration order,
    /// collection elements in order, each object once): the root as `change`, every other object
    /// as `add` with all its properties. Importing them reproduces this state exactly.
    ///
    /// ```swift
    /// let fragments = state.exportFragments()
    /// let copy = try ScopeState(importing: fragments, rootUUID: state.rootUUID, version: state.version, schema: schema)
    /// // copy == state
    /// ```
    public func exportFragments() -> [SyncFragment] {
        var fragments: [SyncFragment] = []
        fragments.reserveCapacity(objects.count)
        walkPreOrder { object in
            fragments.append(
                SyncFragment(
                    type: object.uuid == rootUUID ? .change : .add, uuid: object.uuid, clsName: object.clsName,
                    properties: object.propertiesJSON))
        }
        return fragments
    }

    /// The objects' UUIDs in pre-order from the root.
    public func preOrderUUIDs() -> [UUID] {
        var order: [UUID] = []
        order.reserveCapacity(objects.count)
        walkPreOrder { order.append($0.uuid) }
        return order
    }

    /// Visits every object once in pre-order from the root (iterative, so deep chains cannot
    /// overflow the stack).
    func walkPreOrder(_ visit: (ScopeObject) -> Void) {
        var seen: Set<UUID> = []
        seen.reserveCapacity(objects.count)
        var stack = [rootUUID]
        while let uuid = stack.popLast() {
            guard seen.insert(uuid).inserted, let object = objects[uuid] else { continue }
            visit(object)
            for index in object.modelClass.referenceIndexes.reversed() {
                switch object.values[index] {
                case .reference(let child):
                    if !seen.contains(child) { stack.append(child) }
                case .references(let children):
                    for child in children.reversed() where !seen.contains(child) { stack.append(child) }
                default:
                    break
                }
            }
        }
    }

    /// `{"name","version","rootUUID","fragments":[…]}` — what `GET` on a scope returns.
    public func stateJSON(name: String) -> JSONValue {
        [
            "name": .string(name), "version": .number(JSONNumber(version)), "rootUUID": .string(rootUUID.wireString),
            "fragments": .array(exportFragments().map(\.jsonValue)),
        ]
    }

    /// Rebuilds a state from its export: exactly one `change` fragment, for the root (whose class it
    /// names), and `add` fragments for every other object, each reachable from the root. Properties
    /// missing from a fragment take their defaults. The result is validated like any change set.
    ///
    /// - Throws: ``StateImportError`` naming the first bad fragment.
    public init(
        importing fragments: [SyncFragment], rootUUID: UUID, version: Int, schema: Schema,
        limits: Limits = .unlimited
    ) throws(StateImportError) {
        guard let rootIndex = fragments.firstIndex(where: { $0.uuid == rootUUID }) else {
            throw StateImportError(fragmentIndex: nil, message: "no fragment for the root \(rootUUID.wireString)")
        }
        let rootFragment = fragments[rootIndex]
        guard rootFragment.type == .change else {
            throw StateImportError(fragmentIndex: rootIndex, message: "the root's fragment must be a change")
        }
        guard let rootClass = schema.modelClass(named: rootFragment.clsName) else {
            throw StateImportError(fragmentIndex: rootIndex, message: "the schema has no class \(rootFragment.clsName)")
        }
        if let stray = fragments.firstIndex(where: { $0.type == .change && $0.uuid != rootUUID }) {
            throw StateImportError(fragmentIndex: stray, message: "only the root may be a change in a full state")
        }
        let empty = ScopeState(rootUUID: rootUUID, rootClass: rootClass, version: version - 1)
        switch empty.applying(fragments, schema: schema, limits: limits) {
        case .accepted(let applied):
            self = applied.state
        case .rejected(let replies):
            let index = replies.firstIndex { $0.error != nil }!
            throw StateImportError(fragmentIndex: index, message: replies[index].error!.description)
        }
    }

    /// Creates a scope whose root has the given properties (others at their defaults), at version 0.
    ///
    /// ```swift
    /// let state = try ScopeState.create(rootClass: canvas, properties: ["name": "Sketch"], schema: schema)
    /// ```
    public static func create(
        rootUUID: UUID = UUID(), rootClass: ModelClass, properties: JSONObject = JSONObject(), schema: Schema,
        limits: Limits = Limits()
    ) throws(FragmentError) -> ScopeState {
        // A new root gives whole values, as an `add` does: operations have nothing to apply to.
        for member in properties {
            if case .object = member.value, rootClass.property(named: member.key)?.type.isCollection == true {
                throw FragmentError(
                    .typeMismatch, "a new scope's root gives a collection as an array, not as operations",
                    property: member.key)
            }
        }
        let empty = ScopeState(rootUUID: rootUUID, rootClass: rootClass, version: -1)
        let fragment = SyncFragment(type: .change, uuid: rootUUID, clsName: rootClass.name, properties: properties)
        switch empty.applying([fragment], schema: schema, limits: limits) {
        case .accepted(let applied): return applied.state
        case .rejected(let replies): throw replies[0].error!
        }
    }
}

/// Why a full state could not be imported.
public struct StateImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The index of the fragment at fault, when one is.
    public let fragmentIndex: Int?
    public let message: String

    public init(fragmentIndex: Int?, message: String) {
        self.fragmentIndex = fragmentIndex
        self.message = message
    }

    public var description: String {
        fragmentIndex.map { "fragment \($0): \(message)" } ?? message
    }
}
