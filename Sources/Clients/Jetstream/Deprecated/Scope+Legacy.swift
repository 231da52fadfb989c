import Foundation
import JetstreamModel

/// The original `Scope`'s spellings (jetstream-ios), kept compiling with a deprecation warning whose
/// message or fix-it names today's API. Each calls today's API; none changes how it behaves.
extension Scope {
    /// The original made a scope first and gave it a root afterwards (`scope.root = canvas`). Today
    /// a scope has its root from the start: this scope holds a placeholder root until `root` is
    /// assigned once. Syncing it before then fails (the placeholder is no class of the server's).
    @available(*, deprecated, message: "pass the root at once: Scope(name: name, root: canvas)")
    public convenience init(name: String) {
        self.init(name: name, root: UnassignedRoot())
    }

    /// The original's `scope.onChanges.listen(self) { changeSet in … }`.
    @available(*, deprecated, message: "use scope.onChanges { changeSet in … }, which returns its cancel function")
    public var onChanges: LegacySignal<RecordedChangeSet> {
        LegacySignal { [unowned self] callback in self.onChanges(callback) }
    }

    /// The original's atomic change set (accepted or rejected whole by the server). Its
    /// `procedure:`/`constraints:` have no counterpart: the gateway runs no procedures.
    @available(*, deprecated, renamed: "modifyAtomically(_:)")
    @discardableResult
    public func createAtomicChangeSet(_ changes: () throws -> Void) rethrows -> RecordedChangeSet? {
        try modifyAtomically(changes)
    }

    @available(*, deprecated, renamed: "getObject(_:)")
    public func getObjectById(_ uuid: UUID) -> ModelObject? {
        getObject(uuid)
    }

    @available(*, deprecated, renamed: "getObject(_:)")
    public func getObjectByIdString(_ uuidString: String) -> ModelObject? {
        getObject(uuidString)
    }

    /// Makes `newRoot` the root of this scope made by the deprecated ``init(name:)``, as the
    /// initialiser with a root does: the placeholder leaves, `newRoot` leaves its parents (and the
    /// scope it was the root of), and it joins with its subtree as the initial state.
    func assignLegacyRoot(_ newRoot: ModelObject) {
        guard newRoot !== root else { return }
        precondition(
            root is UnassignedRoot,
            "a scope's root is fixed: make a new Scope(name:root:) instead of assigning scope.root")
        withoutRecording { removeAllObjects() }
        root = newRoot
        modelTypes = ModelTypeRegistry(root: type(of: newRoot))
        providedSchema = nil
        stateMirror = nil
        if let previous = newRoot.scope, previous.root === newRoot {
            previous.removeAllObjects()
        }
        newRoot.detach()
        withoutRecording { attach(newRoot) }
    }
}

/// The root a scope made with the deprecated `Scope(name:)` has until `scope.root` is assigned.
final class UnassignedRoot: ModelObject {}

/// Carries the settable `root` of the original's `scope.root = canvas`: a member of a protocol
/// extension, so reading `scope.root` still finds ``Scope/root`` and only assignment (which the
/// stored property does not allow outside the module) resolves here.
public protocol LegacyRootAssignable {}

extension Scope: LegacyRootAssignable {}

extension LegacyRootAssignable where Self == Scope {
    /// The original's `scope.root = canvas` on a scope made by `Scope(name:)`. Assigning a root to
    /// a scope that already has a real one stops the program: today's roots are fixed.
    @available(*, deprecated, message: "pass the root at once: Scope(name: name, root: canvas)")
    public var root: ModelObject {
        get { (self as Scope).root }
        nonmutating set { (self as Scope).assignLegacyRoot(newValue) }
    }
}

extension ModelObject {
    /// The original's way to make an object the root of a scope (`canvas.setScopeAndMakeRootModel(scope)`).
    @available(*, deprecated, message: "make the scope with its root: Scope(name: name, root: object)")
    public func setScopeAndMakeRootModel(_ scope: Scope) {
        scope.assignLegacyRoot(self)
    }
}
