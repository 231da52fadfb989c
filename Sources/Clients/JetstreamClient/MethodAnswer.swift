import JetstreamJSON

/// The server's answer to ``ScopeSync/call(_:args:isolation:stub:)``.
public struct MethodAnswer: Sendable, Equatable {
    /// The method's name.
    public let method: String
    /// The version of the method's change set, or the scope's version when it changed nothing.
    public let version: Int
    /// The method's result (`null` when it gave none).
    public let result: JSONValue
    /// Whether the method changed the scope (made a version).
    public let changed: Bool
}
