import Foundation
import JetstreamJSON

/// An ordered list of fragments to apply all or nothing. Entries that could not be read as
/// fragments stay in place as errors, so that the reply can name each bad fragment.
///
/// ```swift
/// let body = try JSONParser.parse(bytes)
/// let changeSet = ChangeSet(json: body["fragments"]?.array ?? [])
/// let outcome = state.applying(changeSet, schema: schema)
/// ```
public struct ChangeSet: Sendable, Hashable {
    public var entries: [Result<SyncFragment, FragmentError>]

    /// A change set of fragments that were already read.
    public init(fragments: [SyncFragment]) {
        entries = fragments.map { .success($0) }
    }

    /// Reads each element with ``SyncFragment/init(json:)``, keeping failures as entries.
    public init(json elements: [JSONValue]) {
        entries = elements.map { element in
            Result { () throws(FragmentError) in try SyncFragment(json: element) }
        }
    }

    /// The number of entries, unreadable ones included.
    public var count: Int { entries.count }
}

/// The result of applying a change set: all of it or none of it.
///
/// ```swift
/// switch state.applying(changeSet, schema: schema) {
/// case .accepted(let applied): publish(applied.fragments, removed: applied.removed)
/// case .rejected(let replies): respond(replies.map(\.jsonValue))
/// }
/// ```
public enum ChangeSetOutcome: Sendable {
    case accepted(AppliedChangeSet)
    /// One reply per fragment, in order; at least one is an error. Nothing changed.
    case rejected([FragmentReply])

    /// The accepted set, or nil when rejected.
    public var applied: AppliedChangeSet? {
        if case .accepted(let applied) = self { return applied }
        return nil
    }

    /// One reply per fragment: all `{}` when accepted.
    public var replies: [FragmentReply] {
        switch self {
        case .accepted(let applied): applied.replies
        case .rejected(let replies): replies
        }
    }
}

/// An accepted change set: the new state and what to store and broadcast.
public struct AppliedChangeSet: Sendable {
    /// The state after the change set, at version + 1.
    public let state: ScopeState
    /// The fragments as stored and broadcast: `add` with every property, `change` with the given
    /// properties; properties in schema order, values normalised (lowercase UUIDs, canonical numbers).
    public let fragments: [SyncFragment]
    /// Objects that left the scope because they were no longer reachable from the root, sorted.
    public let removed: [UUID]

    /// `{}` for every fragment.
    public var replies: [FragmentReply] { Array(repeating: .ok, count: fragments.count) }
}

extension AppliedChangeSet {
    /// Writes the SSE `changeset` payload `{"version":N,"fragments":[…],"removed":[…]}` straight
    /// into a writer, so the gateway encodes an accepted set once and reuses the bytes.
    ///
    /// ```swift
    /// var writer = JSONWriter()
    /// applied.writeEvent(to: &writer)
    /// let data = writer.bytes
    /// ```
    ///
    /// - Parameters:
    ///   - idempotencyKey: the writer's key, written as `"idempotencyKey"` right after the version
    ///     (change-set identity); nil writes none.
    ///   - annotations: writes more members after those (each starting with `,`): the server's
    ///     record of when, by whom and why (`"at"`, `"subject"`, `"restoredFrom"`, `"revertOf"`).
    public func writeEvent(
        to writer: inout JSONWriter, idempotencyKey: String? = nil, annotations: (inout JSONWriter) -> Void = { _ in }
    ) {
        writer.writeRaw(#"{"version":"#)
        writer.writeRaw(String(state.version))
        if let idempotencyKey {
            writer.writeRaw(#","idempotencyKey":"#)
            writer.write(string: idempotencyKey)
        }
        annotations(&writer)
        writer.writeRaw(#","fragments":["#)
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw(#"],"removed":["#)
        for (index, uuid) in removed.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(uuid: uuid)
        }
        writer.writeRaw("]}")
    }
}

/// The answer for one fragment of a rejected change set: `{}` when the fragment was fine on its
/// own, `{"error":{…}}` when it was not.
///
/// ```swift
/// FragmentReply.ok.jsonValue.encodedString()   // {}
/// ```
public enum FragmentReply: Sendable, Hashable {
    case ok
    case error(FragmentError)

    /// The error, or nil for `{}`.
    public var error: FragmentError? {
        if case .error(let error) = self { return error }
        return nil
    }

    /// `{}` or `{"error":{"type","message","property"}}`.
    public var jsonValue: JSONValue {
        switch self {
        case .ok: .object(JSONObject())
        case .error(let error): .object(JSONObject([JSONObject.Member(key: "error", value: error.jsonValue)]))
        }
    }
}
