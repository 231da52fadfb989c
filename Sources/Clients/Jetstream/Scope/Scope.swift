import Foundation
import JetstreamModel

/// A tree of model objects under one root: the UUID index, change recording, queued observation
/// delivery and application of remote fragments.
///
/// ```swift
/// let canvas = Canvas()
/// let scope = Scope(name: "canvas-1", root: canvas)
/// scope.onChanges { changeSet in send(changeSet.fragments) }
/// scope.modify {
///     canvas.shapes.append(Shape())
/// }  // onChanges receives [add Shape, change Canvas{shapes}]; queued observers have run
/// ```
///
/// The scope owns its objects; an object refers to its scope weakly, so keep the scope alive (a
/// scope nobody holds is gone, and its objects report `scope == nil`).
///
/// A scope and its objects are not `Sendable`: they belong to one isolation domain (a task, an actor,
/// or the main thread). Move a scope between domains as a whole (`sending`), or let a ``ScopeHost``
/// actor own it.
public final class Scope {
    /// A name for the scope (the gateway's scope name, for example).
    public let name: String
    /// The root object: it is always in the scope and never has parents. Fixed for the scope's
    /// life; only the original's `Scope(name:)` + `scope.root =` spelling (Deprecated/) assigns it
    /// once, replacing the placeholder that spelling starts with.
    public internal(set) var root: ModelObject

    var objectsByUUID: [UUID: ModelObject] = [:]
    var modelTypes: ModelTypeRegistry
    var providedSchema: Schema?
    /// The model core's view of the objects, kept while no local write changed them: remote
    /// fragments are validated against it. Rebuilt from the objects when needed.
    var stateMirror: ScopeState?

    /// Limits for applying remote fragments; none by default, the server already enforced its own.
    public var limits: Limits = .unlimited

    var recorder = ChangeRecorder()
    var remoteApplicationDepth = 0
    var sweepDeferralDepth = 0
    /// Objects that lost a parent relationship since the last sweep.
    var orphanCandidates: [ModelObject] = []

    var notificationQueue: [ModelObject] = []
    var queuedObjectIDs: Set<ObjectIdentifier> = []
    var changeHandlers: [(id: Int, handler: (RecordedChangeSet) -> Void)] = []
    var nextHandlerID = 0
    var modifyDepth = 0
    var isFlushing = false
    var flushRequested = false

    /// Called once when something becomes pending (a queued observation or a recorded change) after
    /// the last ``flush()``; the owner schedules a flush from it. `nil` (the default) means the owner
    /// flushes explicitly. ``ScopeHost`` sets it to flush on its actor.
    public var onFlushNeeded: (() -> Void)?

    /// A scope with `root` and every object reachable from it. Objects already present are taken as
    /// the initial state: they are not recorded as changes.
    ///
    /// `root` leaves its parents first (as in the original). If it is the root of another scope, that
    /// scope is emptied. `additionalTypes` names classes that are not reachable from the root class
    /// through property types (subclasses, for example) so remote `add`s can create them. `schema`
    /// (e.g. the gateway's `GET /v1/schema`) is what remote fragments are validated against; without
    /// it the schema is generated from the model classes (``ModelObject/schema(scopePattern:additionalTypes:)``).
    public init(
        name: String = "", root: ModelObject, schema: Schema? = nil, additionalTypes: [ModelObject.Type] = []
    ) {
        self.name = name
        self.root = root
        self.providedSchema = schema
        self.modelTypes = ModelTypeRegistry(root: type(of: root), additionalTypes: additionalTypes)
        if let previous = root.scope, previous.root === root {
            previous.removeAllObjects()
        }
        root.detach()
        remoteApplicationDepth += 1
        attach(root)
        remoteApplicationDepth -= 1
    }

    /// The object with `uuid`, if it is in the scope.
    public func getObject(_ uuid: UUID) -> ModelObject? {
        objectsByUUID[uuid]
    }

    /// The object whose UUID is `uuidString` (any case), if it is in the scope.
    public func getObject(_ uuidString: String) -> ModelObject? {
        UUID(uuidString: uuidString).flatMap { objectsByUUID[$0] }
    }

    /// The number of objects in the scope, the root included.
    public var objectCount: Int { objectsByUUID.count }

    /// Every object of the scope in pre-order from the root (references in declaration order,
    /// collection elements in order; shared objects once).
    public var objects: [ModelObject] {
        var result: [ModelObject] = []
        var seen: Set<ObjectIdentifier> = []
        var stack: [ModelObject] = [root]
        while let object = stack.popLast() {
            guard object.scope === self, seen.insert(ObjectIdentifier(object)).inserted else { continue }
            result.append(object)
            stack += object.children.reversed()
        }
        return result
    }

    /// Registers `handler` for every recorded batch of local changes; returns its cancel function.
    ///
    /// ```swift
    /// let cancel = scope.onChanges { changeSet in print(changeSet.fragments.count) }
    /// ```
    @discardableResult
    public func onChanges(_ handler: @escaping (RecordedChangeSet) -> Void) -> CancelObserver {
        nextHandlerID += 1
        let id = nextHandlerID
        changeHandlers.append((id, handler))
        return { [weak self] in self?.changeHandlers.removeAll { $0.id == id } }
    }

    var isRecording: Bool { remoteApplicationDepth == 0 }

    /// Runs `body` without recording its changes (remote application and reverts).
    func withoutRecording<Result>(_ body: () throws -> Result) rethrows -> Result {
        remoteApplicationDepth += 1
        defer { remoteApplicationDepth -= 1 }
        return try body()
    }
}
