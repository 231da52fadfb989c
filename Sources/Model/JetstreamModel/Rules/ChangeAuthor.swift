/// Who writes a change set, as the schema's rules see it: the subject (who becomes the owner of
/// the objects the set adds), its roles, and which rules apply to it.
///
/// ```swift
/// let author = ChangeAuthor(subject: "ada", roles: ["editor"])
/// state.applying(changeSet, schema: schema, author: author)   // `forbidden` / `immutable` refusals
/// ```
public struct ChangeAuthor: Sendable, Hashable {
    /// The authenticated subject; nil when anonymous. The objects the set adds are owned by it.
    public var subject: String?
    /// The roles of the subject (a token's `roles` claim).
    public var roles: Set<String>
    /// Whether `write`/`delete` rules (owner and roles) apply.
    public var checksOwnership: Bool
    /// Whether `immutable` properties are kept as their add set them.
    public var checksImmutability: Bool

    /// A writer every rule applies to.
    public init(subject: String?, roles: Set<String> = []) {
        self.init(subject: subject, roles: roles, checksOwnership: true, checksImmutability: true)
    }

    init(subject: String?, roles: Set<String>, checksOwnership: Bool, checksImmutability: Bool) {
        self.subject = subject
        self.roles = roles
        self.checksOwnership = checksOwnership
        self.checksImmutability = checksImmutability
    }

    /// The server itself, which no rule binds: what is already accepted (replay, another node's
    /// commit, a stream's echo), a restore or a revert, a method that acts as the server. The
    /// objects it adds are owned by `subject`, the subject the set is recorded with.
    public static func server(subject: String? = nil) -> ChangeAuthor {
        ChangeAuthor(subject: subject, roles: [], checksOwnership: false, checksImmutability: false)
    }

    /// A client checking its own edits before it sends them: it knows neither the owners of the
    /// objects it holds nor what the server will make of its token, so only `immutable` — which
    /// needs neither — is checked; the server checks the rest.
    public static let localEdit = ChangeAuthor(
        subject: nil, roles: [], checksOwnership: false, checksImmutability: true)

    /// Whether any rule applies: the applier skips the checks (and their bookkeeping) otherwise.
    var checksAnything: Bool { checksOwnership || checksImmutability }
}
