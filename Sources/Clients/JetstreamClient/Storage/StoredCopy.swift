import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

/// What the client's storage keeps of one scope (docs/offline.md): the confirmed state and its
/// version under the server's schema, the pending change sets in order with their keys, stamps and
/// status, and the client id and key sequence, so that the keys made after a restart are new.
struct StoredCopy: Sendable {
    /// The layout's version: a copy of another is not read (it is moved aside, and the scope
    /// starts afresh from the server).
    static let format = 1

    var scope: String
    var clientID: String
    /// The sequence number of the last key made (`<clientID>:<sequence>`).
    var sequence: Int
    /// The server's schema the state was read under, and its `ETag`.
    var schema: Schema
    var schemaTag: String?
    var state: ScopeState
    var pending: [PendingChangeSet]

    var jsonValue: JSONValue {
        [
            "format": .number(JSONNumber(Self.format)), "scope": .string(scope), "clientID": .string(clientID),
            "sequence": .number(JSONNumber(sequence)), "schemaTag": schemaTag.map(JSONValue.string) ?? .null,
            "schema": schema.jsonValue,
            "state": [
                "version": .number(JSONNumber(state.version)), "rootUUID": .string(state.rootUUID.wireString),
                "fragments": .array(state.exportFragments().map(\.jsonValue)),
            ],
            "pending": .array(pending.map(\.storedJSON)),
        ]
    }

    /// Reads a copy back: its own schema first, then the state under it.
    init(json: JSONValue) throws(StoredCopyError) {
        guard json["format"]?.number?.int64Value == Int64(Self.format) else {
            throw StoredCopyError(
                "it is in another format (\(json["format"]?.encodedString() ?? "none"), this client reads \(Self.format))"
            )
        }
        guard let scope = json["scope"]?.string, let clientID = json["clientID"]?.string,
            let sequence = json["sequence"]?.number?.int64Value, let schemaJSON = json["schema"],
            let stateJSON = json["state"], let pendingJSON = json["pending"]?.array
        else { throw StoredCopyError("a member is missing (scope, clientID, sequence, schema, state or pending)") }
        do {
            schema = try Schema.parse(tree: schemaJSON)
        } catch {
            throw StoredCopyError("its schema: \(error)")
        }
        do {
            state = try Client.state(from: stateJSON, schema: schema)
        } catch {
            throw StoredCopyError("its state: \(error)")
        }
        self.scope = scope
        self.clientID = clientID
        self.sequence = Int(sequence)
        self.schemaTag = json["schemaTag"]?.string
        pending = try pendingJSON.map { element throws(StoredCopyError) in try PendingChangeSet(storedJSON: element) }
    }

    init(
        scope: String, clientID: String, sequence: Int, schema: Schema, schemaTag: String?, state: ScopeState,
        pending: [PendingChangeSet]
    ) {
        self.scope = scope
        self.clientID = clientID
        self.sequence = sequence
        self.schema = schema
        self.schemaTag = schemaTag
        self.state = state
        self.pending = pending
    }

    /// Brings in what the journal recorded after the copy was written. A set the copy already has
    /// (a crash between writing a copy and emptying the journal) is not added twice.
    mutating func apply(_ record: JournalRecord) {
        switch record {
        case .added(let set, let sequence):
            guard sequence > self.sequence else { return }
            self.sequence = sequence
            pending.append(set)
        case .accepted(let key, let version):
            if let index = pending.firstIndex(where: { $0.key == key }) {
                pending[index].status = .accepted(version: version)
            }
        case .finished(let key):
            pending.removeAll { $0.key == key }
        }
    }
}

/// Why a stored copy could not be read.
struct StoredCopyError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension PendingChangeSet {
    var storedJSON: JSONValue {
        var object: JSONObject = [
            "key": .string(key), "fragments": .array(fragments.map(\.jsonValue)),
            "created": created.map(JSONValue.string) ?? .null,
        ]
        if case .accepted(let version) = status { object["accepted"] = .number(JSONNumber(version)) }
        if let method { object["method"] = ["name": .string(method.name), "args": method.args] }
        return .object(object)
    }

    /// A stored set: queued again unless its answer was stored (a set in flight at a crash is sent
    /// again with its key, which the server answers once).
    init(storedJSON json: JSONValue) throws(StoredCopyError) {
        guard let key = json["key"]?.string, let fragmentsJSON = json["fragments"]?.array else {
            throw StoredCopyError("a pending set without key or fragments")
        }
        do {
            fragments = try fragmentsJSON.map { element throws(FragmentError) in try SyncFragment(json: element) }
        } catch {
            throw StoredCopyError("pending set \(key): \(error)")
        }
        self.key = key
        created = json["created"]?.string
        status = json["accepted"]?.number?.int64Value.map { .accepted(version: Int($0)) } ?? .queued
        if let name = json["method"]?["name"]?.string {
            method = PendingMethod(name: name, args: json["method"]?["args"] ?? .null)
        }
    }
}
