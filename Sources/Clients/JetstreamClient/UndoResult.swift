/// What ``ScopeSync/undo(isolation:)`` did: the revert's new version, the version of this
/// client's change set it reverted, and the newer own versions it passed over on the way.
///
/// ```swift
/// if let undone = try await sync.undo() {
///     print("reverted version \(undone.revertOf) as version \(undone.version)")
/// }
/// ```
public struct UndoResult: Sendable, Equatable {
    /// An own version the undo passed over (and forgot).
    public struct Skipped: Sendable, Equatable {
        public enum Reason: String, Sendable {
            /// `409 revert-conflict`: a later change set touched the same properties or objects.
            case conflict
            /// Its revert changes nothing (its effect is already gone).
            case unchanged
            /// Older than the history the server keeps.
            case gone
            /// The revert breaks a rule of the model (`422`).
            case refused
        }

        public let version: Int
        public let reason: Reason
    }

    /// The scope's version after the revert.
    public let version: Int
    /// The version of the change set it reverted.
    public let revertOf: Int
    /// Newer own versions passed over, most recent first.
    public let skipped: [Skipped]
}
