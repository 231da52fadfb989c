import Foundation
import JetstreamJSON
import JetstreamModel

/// A `changeset` event (or a revert's or restore's answer, the same payload) read and, when the
/// confirmed state it follows is known, applied to it — both off the actor the scope's observers
/// run on. That actor only takes the result (``SyncEngine/event(_:)``): the typed scope's update
/// and the observers are all that is left for it.
struct PreparedChangeSet: Sendable {
    let version: Int
    let fragments: [SyncFragment]
    let removed: [UUID]
    let idempotencyKey: String?
    /// The event applied to the confirmed state at `version - 1` under `schema`, if that was known.
    private(set) var validated: Validated?
    /// The engine's ``SyncEngine/schemaGeneration`` the event was validated under.
    private(set) var schemaGeneration = -1

    enum Validated: Sendable {
        case applied(ScopeState)
        /// The event does not apply to the confirmed state: the stream and the client disagree.
        case refused([FragmentReply])
    }

    /// Reads the payload's `version`, `fragments`, `removed` and `idempotencyKey`; nil when it is
    /// not a change set.
    init?(json: JSONValue) {
        guard let number = json["version"]?.number?.int64Value, let array = json["fragments"]?.array,
            let fragments = try? array.map({ element throws(FragmentError) in try SyncFragment(json: element) })
        else { return nil }
        version = Int(number)
        self.fragments = fragments
        removed = (json["removed"]?.array ?? []).compactMap { $0.string.flatMap(UUID.init(wireString:)) }
        idempotencyKey = json["idempotencyKey"]?.string
    }

    /// Applies the event to `base`, the confirmed state it follows (one version before it), under
    /// `schema`: the check and the new state the observers' actor would otherwise compute.
    mutating func validate(against base: ConfirmedBase) {
        guard base.state.version == version - 1 else { return }
        schemaGeneration = base.schemaGeneration
        switch base.state.applying(fragments, schema: base.schema, limits: .unlimited) {
        case .accepted(let applied): validated = .applied(applied.state.withVersion(version))
        case .rejected(let replies): validated = .refused(replies)
        }
    }
}

/// A copy's confirmed state and the schema it is read under, as its actor last left them: what the
/// shared stream prepares the copy's next event against.
struct ConfirmedBase: Sendable {
    let state: ScopeState
    let schema: Schema
    let schemaGeneration: Int
}
