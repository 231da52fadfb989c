import JetstreamModel

/// Why remote fragments or a full state could not be applied to a ``Scope``. Nothing changed.
public enum ScopeApplyError: Error, CustomStringConvertible {
    /// The model core rejected the change set: one reply per fragment, at least one an error.
    case rejected([FragmentReply])
    /// The full state is not a valid state of this scope's schema.
    case invalidState(StateImportError)
    /// The model classes do not form a valid schema.
    case invalidSchema(SchemaError)
    /// The local objects do not satisfy the schema (a local write broke a constraint), so there is
    /// no valid state to apply the fragments to.
    case invalidLocalState(StateImportError)
    /// The schema has a class that no Swift type of this scope implements.
    case unknownSwiftClass(String)

    public var description: String {
        switch self {
        case .rejected(let replies):
            let errors = replies.enumerated().compactMap { index, reply in
                reply.error.map { "fragment \(index): \($0)" }
            }
            return "change set rejected: " + errors.joined(separator: "; ")
        case .invalidState(let error): return "invalid full state: \(error)"
        case .invalidSchema(let error): return "invalid schema: \(error)"
        case .invalidLocalState(let error): return "the local objects violate the schema: \(error)"
        case .unknownSwiftClass(let name): return "no Swift model class for '\(name)' in this scope"
        }
    }
}
