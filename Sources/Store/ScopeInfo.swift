/// A live scope as the store sees it: its descriptor, its current version and how far back its history goes.
///
/// ```swift
/// if let info = try await store.scope(named: "canvas-1"), info.canResume(from: lastEventID) { … }
/// ```
public struct ScopeInfo: Sendable, Hashable {
    public var descriptor: ScopeDescriptor
    /// The version of the last accepted change set (or of the creation, before any).
    public var version: Int64
    /// The lowest change-set version still in the log, `nil` when the log holds none.
    public var lowestRetainedVersion: Int64?

    public init(descriptor: ScopeDescriptor, version: Int64, lowestRetainedVersion: Int64?) {
        self.descriptor = descriptor
        self.version = version
        self.lowestRetainedVersion = lowestRetainedVersion
    }

    public var name: String { descriptor.name }

    /// The oldest version V from which `changes(after: V)` returns every change set up to ``version``.
    public var oldestResumableVersion: Int64 { (lowestRetainedVersion ?? version + 1) - 1 }

    /// Whether a client at version `version` can catch up from the log (otherwise it needs a full `reset`).
    public func canResume(from version: Int64) -> Bool {
        version >= oldestResumableVersion && version <= self.version
    }
}
