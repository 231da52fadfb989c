import JetstreamJSON
import JetstreamModel

/// Logic on the server (`POST /v1/scopes/{name}/methods/{method}`, docs/methods.md): a named
/// function that reads the scope's latest state and the caller's arguments and returns the
/// fragments to apply, as one change set, and a result for the caller.
///
/// It runs under the scope's lock, against the state every earlier write of the scope has been
/// staged on, so its fragments commit as the very next version: no other write can come between
/// what it read and what it writes (no lost update). Keep it quick — the scope's other writes
/// wait for it — and free of I/O.
///
/// ```swift
/// let arrange = ScopeMethod("arrange") { call in
///     guard let columns = call.args["columns"]?.number?.int64Value, columns > 0 else {
///         throw MethodRejection("columns must be a positive integer")
///     }
///     return MethodOutcome(fragments: grid(call.state, columns: Int(columns)), result: ["moved": 3])
/// }
/// ```
public struct ScopeMethod: Sendable {
    public typealias Handler = @Sendable (MethodCall) throws -> MethodOutcome

    public let name: String
    public let handler: Handler

    public init(_ name: String, _ handler: @escaping Handler) {
        self.name = name
        self.handler = handler
    }
}

/// What a method is called with.
public struct MethodCall: Sendable {
    /// The scope's name.
    public let scope: String
    /// The scope's latest state (its `version` is the one the method's change set follows).
    public let state: ScopeState
    /// The request's `args` (`null` when it sent none).
    public let args: JSONValue
    /// The authenticated subject calling, nil when anonymous.
    public let subject: String?
    /// The caller's token claims, nil when anonymous.
    public let claims: JSONValue?
    /// The server's schema.
    public let schema: Schema

    public init(scope: String, state: ScopeState, args: JSONValue, subject: String?, claims: JSONValue?, schema: Schema)
    {
        self.scope = scope
        self.state = state
        self.args = args
        self.subject = subject
        self.claims = claims
        self.schema = schema
    }
}

/// What a method returns: the fragments to apply as one change set (none: nothing changes, no
/// version is made) and the result the caller gets (`"result"` in the answer).
///
/// The fragments are judged by the schema's write rules as the caller's own writes (its subject
/// and roles), unless `actsAsServer`: then no rule binds them — the method itself decided who may
/// do what (a cart's `addItem` that may update a total no client may write). Either way the
/// objects they add are owned by the caller.
public struct MethodOutcome: Sendable {
    public var fragments: [SyncFragment]
    public var result: JSONValue
    /// Whether the fragments are written as the server, which the schema's rules do not bind.
    public var actsAsServer: Bool

    public init(fragments: [SyncFragment], result: JSONValue = .null, actsAsServer: Bool = false) {
        self.fragments = fragments
        self.result = result
        self.actsAsServer = actsAsServer
    }
}

/// Thrown by a method that refuses the call: `422 /problems/method-rejected` with `reason`,
/// nothing applied.
public struct MethodRejection: Error, Sendable, Equatable {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }
}
