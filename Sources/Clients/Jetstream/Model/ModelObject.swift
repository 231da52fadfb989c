import Foundation
import Observation

/// The base class of typed model objects: subclass it and declare `@Synced` and `@Local` properties.
///
/// ```swift
/// final class Canvas: ModelObject {
///     @Synced var name: String? = nil
///     @Synced var shapes: [Shape] = []
/// }
///
/// let canvas = Canvas()
/// let scope = Scope(root: canvas)
/// canvas.shapes.append(Shape())  // the shape joins the scope
/// ```
/// Subclasses need a `required init()` (the compiler synthesises it when every property has an initial
/// value), because the framework creates objects by class when it applies remote `add` fragments.
///
/// Objects are not `Sendable`: an object graph and its ``Scope`` live in one isolation domain (see
/// ``ScopeHost`` to own a scope from an actor).
open class ModelObject: Hashable, CustomStringConvertible {
    /// The identity of the object across processes; sent lowercase on the wire.
    public internal(set) var uuid: UUID
    /// The scope the object belongs to, while it is the root or reachable from the root.
    public internal(set) weak var scope: Scope?

    var parentRelationships: [ParentRelationship] = []
    private(set) var slots: [any AnyPropertySlot] = []
    private(set) var slotsByKey: [String: any AnyPropertySlot] = [:]
    /// The slot the last wrapper read touched: how a key path is turned into a property name.
    var lastAccessedSlot: (any AnyPropertySlot)?

    var observations: [Observation] = []
    var nextObservationID = 0
    /// Queued observations (change and tree) to deliver at the next flush of the scope.
    var pendingObservationIDs: Set<Int> = []
    /// Swift's Observation framework for this object's properties (`ModelObject+Observable.swift`).
    let observationRegistrar = ObservationRegistrar()

    /// A new object with a random UUID and every property at its initial value.
    public required init() {
        uuid = UUID()
        var slots: [any AnyPropertySlot] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        var levels: [[any AnyPropertySlot]] = []
        while let current = mirror {
            var level: [any AnyPropertySlot] = []
            for child in current.children {
                guard let label = child.label, label.hasPrefix("_"),
                    let slot = Self.slot(in: child.value)
                else { continue }
                slot.key = String(label.dropFirst())
                level.append(slot)
            }
            levels.append(level)
            mirror = current.superclassMirror
        }
        for level in levels.reversed() { slots += level }
        self.slots = slots
        self.slotsByKey = Dictionary(slots.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A new object with the given UUID.
    public convenience init(uuid: UUID) {
        self.init()
        self.uuid = uuid
    }

    /// The slot a stored property holds when it is a `@Synced` or `@Local` wrapper: a cast, not a
    /// second `Mirror` (reflecting the wrapper demangled its field types on every object).
    private static func slot(in wrapper: Any) -> (any AnyPropertySlot)? {
        (wrapper as? any PropertySlotWrapper)?.anySlot
    }

    /// The class name used in the schema and in fragments' `clsName`: the Swift name without module.
    open class var className: String {
        String(describing: self)
    }

    /// The names of the synced properties, in declaration order (superclass first).
    public var syncedPropertyKeys: [String] { slots.filter(\.isSynced).map(\.key) }

    /// The names of all observed properties, synced and local.
    public var propertyKeys: [String] { slots.map(\.key) }

    /// The objects that refer to this one through a synced property, with the property's name; one
    /// entry per (parent, key), however often the parent's collection holds the object.
    public var parents: [(parent: ModelObject, key: String)] {
        parentRelationships.compactMap { relationship in
            relationship.parent.map { ($0, relationship.key) }
        }
    }

    /// The objects this one refers to through its synced properties (children), without duplicates.
    public var children: [ModelObject] {
        var seen: Set<ObjectIdentifier> = []
        var result: [ModelObject] = []
        for slot in slots where slot.isSynced {
            for child in slot.referencedObjects where seen.insert(ObjectIdentifier(child)).inserted {
                result.append(child)
            }
        }
        return result
    }

    /// Whether this object is the root of its scope.
    public var isScopeRoot: Bool { scope?.root === self }

    /// Removes the object from every parent (their references and collections drop it), so it leaves
    /// the scope together with the descendants that are no longer reachable.
    ///
    /// ```swift
    /// shape.detach()  // canvas.shapes no longer holds it
    /// ```
    public func detach() {
        for (parent, key) in parents {
            parent.slotsByKey[key]?.removeReferences(to: self, on: parent)
        }
    }

    public static func == (lhs: ModelObject, rhs: ModelObject) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    public var description: String {
        "\(Self.className)(\(uuid.uuidString.lowercased()))"
    }
}

extension ModelObject: ScalarPropertyValue {
    public var referencedObjects: [ModelObject] { [self] }
    public static var referencedModelType: ModelObject.Type? { self }
}
