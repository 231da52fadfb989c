import JetstreamJSON

/// What a node on a shared store tells the others about its schema (metadata `node:<id>`),
/// refreshed while it runs and removed when it stops: enough for each node to see whether it
/// may serve beside the others (``JetstreamModel/Schema/rollingUpgradeConflicts(with:)``).
///
/// ```json
/// {"node":"1b4e…","fingerprint":"9c1d…","schema":{…},"startedAt":1795000000000,"seenAt":1795000004000}
/// ```
struct NodeSchemaEntry: Sendable, Equatable {
    static let keyPrefix = "node:"

    var node: String
    var fingerprint: String
    var schema: JSONValue
    /// Wall-clock milliseconds: when the node started (the younger of two conflicting nodes
    /// yields), and when it last refreshed this entry (an entry not refreshed is a node gone).
    var startedAt: Int64
    var seenAt: Int64

    var key: String { Self.keyPrefix + node }

    init(node: String, fingerprint: String, schema: JSONValue, startedAt: Int64, seenAt: Int64) {
        self.node = node
        self.fingerprint = fingerprint
        self.schema = schema
        self.startedAt = startedAt
        self.seenAt = seenAt
    }

    init?(bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes), let node = json["node"]?.string,
            let fingerprint = json["fingerprint"]?.string, let schema = json["schema"],
            let startedAt = json["startedAt"]?.number?.int64Value, let seenAt = json["seenAt"]?.number?.int64Value
        else { return nil }
        self.init(node: node, fingerprint: fingerprint, schema: schema, startedAt: startedAt, seenAt: seenAt)
    }

    var bytes: [UInt8] {
        let json: JSONValue = [
            "node": .string(node), "fingerprint": .string(fingerprint), "schema": schema,
            "startedAt": .number(JSONNumber(startedAt)), "seenAt": .number(JSONNumber(seenAt)),
        ]
        return json.encoded()
    }

    /// Whether this node started before `other` (ties broken by id): the later one yields.
    func isOlder(than other: NodeSchemaEntry) -> Bool {
        (startedAt, node) < (other.startedAt, other.node)
    }
}
