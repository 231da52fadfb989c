import JetstreamJSON
import JetstreamModel

/// One entry of a scope's journal: what happened to its pending sets since its copy was last
/// written (``StoredCopy/apply(_:)`` reads them back in order).
enum JournalRecord: Sendable {
    /// A local change set became pending under its key (the `sequence` of `<clientID>:<sequence>`).
    case added(PendingChangeSet, sequence: Int)
    /// The server accepted the set at `version` (its answer or its echo).
    case accepted(key: String, version: Int)
    /// The set left the pending list without being accepted: refused.
    case finished(key: String)

    var jsonValue: JSONValue {
        switch self {
        case .added(let set, let sequence):
            var object = set.storedJSON.object ?? JSONObject()
            object["t"] = "added"
            object["sequence"] = .number(JSONNumber(sequence))
            return .object(object)
        case .accepted(let key, let version):
            return ["t": "accepted", "key": .string(key), "version": .number(JSONNumber(version))]
        case .finished(let key):
            return ["t": "finished", "key": .string(key)]
        }
    }

    init(json: JSONValue) throws(StoredCopyError) {
        switch json["t"]?.string {
        case "added":
            guard let sequence = json["sequence"]?.number?.int64Value else {
                throw StoredCopyError("a journal entry 'added' without its sequence")
            }
            self = .added(try PendingChangeSet(storedJSON: json), sequence: Int(sequence))
        case "accepted":
            guard let key = json["key"]?.string, let version = json["version"]?.number?.int64Value else {
                throw StoredCopyError("a journal entry 'accepted' without key or version")
            }
            self = .accepted(key: key, version: Int(version))
        case "finished":
            guard let key = json["key"]?.string else { throw StoredCopyError("a journal entry 'finished' without key") }
            self = .finished(key: key)
        default:
            throw StoredCopyError("a journal entry of unknown kind \(json["t"]?.encodedString() ?? "none")")
        }
    }
}
