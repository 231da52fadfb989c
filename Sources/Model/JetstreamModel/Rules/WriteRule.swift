/// Who may write an object or a property, or remove an object (the schema's `rules:` and a
/// property's `write:`): anyone, the object's owner, or a subject holding a role.
///
/// ```yaml
/// Shape:
///   rules: { write: owner, delete: "role:editor" }
///   label: { type: String, write: owner }
/// ```
public enum WriteRule: Sendable, Hashable, CustomStringConvertible {
    /// Every writer (the default).
    case any
    /// The subject that added the object; an object without an owner (added anonymously) stays
    /// open to every writer.
    case owner
    /// A subject whose token's `roles` claim lists the role.
    case role(String)

    /// Reads `any`, `owner` or `role:<name>`; nil for anything else.
    public init?(parsing text: String) {
        switch text {
        case "any": self = .any
        case "owner": self = .owner
        default:
            guard text.hasPrefix("role:") else { return nil }
            let role = String(text.dropFirst("role:".count))
            guard !role.isEmpty, !role.contains(where: \.isWhitespace) else { return nil }
            self = .role(role)
        }
    }

    /// `any`, `owner` or `role:<name>`, as the schema writes it.
    public var description: String {
        switch self {
        case .any: "any"
        case .owner: "owner"
        case .role(let role): "role:\(role)"
        }
    }

    /// Whether `author` may write (or remove) an object owned by `owner` under this rule. An
    /// author the rules do not apply to (the server, replay) always may.
    func allows(_ author: ChangeAuthor, owner: String?) -> Bool {
        guard author.checksOwnership else { return true }
        switch self {
        case .any: return true
        case .owner: return owner == nil || owner == author.subject
        case .role(let role): return author.roles.contains(role)
        }
    }

    /// What a refusal under this rule says: who may `action` (change, remove, add) an object of
    /// `className`, or its `property`.
    func refusal(_ action: String, of className: String, property: String? = nil, owner: String?) -> String {
        let ownerName = owner.map { " '\($0)'" } ?? ""
        switch (self, property) {
        case (.role(let role), nil): return "only a subject with the role '\(role)' may \(action) a \(className)"
        case (.role(let role), let property?):
            return "only a subject with the role '\(role)' may \(action) a \(className)'s \(property)"
        case (_, nil): return "only its owner\(ownerName) may \(action) this \(className)"
        case (_, let property?): return "only the \(className)'s owner\(ownerName) may \(action) its \(property)"
        }
    }
}

/// A class's rules (`rules: { write: owner, delete: owner }`): who may change its objects and who
/// may remove them. A subclass without rules of its own has its superclass's.
public struct ClassRules: Sendable, Hashable {
    public var write: WriteRule
    public var delete: WriteRule

    public init(write: WriteRule = .any, delete: WriteRule = .any) {
        self.write = write
        self.delete = delete
    }

    /// Open to every writer.
    public static let open = ClassRules()

    public var isOpen: Bool { write == .any && delete == .any }
}
