/// What the store keeps about a scope besides its versions: its name and its root object's identity.
///
/// ```swift
/// let version = try await store.createScope(
///     ScopeDescriptor(name: "canvas-1", rootClass: "Canvas", rootUUID: uuid), snapshot: stateBytes)
/// ```
public struct ScopeDescriptor: Sendable, Hashable {
    /// The scope's name (the gateway validates the character set; the store takes any non-empty string).
    public var name: String
    /// The class name of the scope's root object.
    public var rootClass: String
    /// The root object's UUID, as text.
    public var rootUUID: String

    public init(name: String, rootClass: String, rootUUID: String) {
        self.name = name
        self.rootClass = rootClass
        self.rootUUID = rootUUID
    }
}
