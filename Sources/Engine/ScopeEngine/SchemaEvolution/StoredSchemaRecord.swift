import JetstreamJSON
import JetstreamModel

/// What the store remembers about the schema it was last served with (its metadata `schema`):
/// the schema's fingerprint and long form, and for each scope the version it had when a schema
/// took over, so that a stream resuming from at or before it gets a `reset` under the new schema
/// instead of change sets its copy would read under the old one.
///
/// ```json
/// {"fingerprint":"9c1d…","schema":{"models":{…},"scopes":{…}},"boundaries":{"board-1":41}}
/// ```
struct StoredSchemaRecord: Sendable, Equatable {
    static let metadataKey = "schema"

    var fingerprint: String
    var schema: JSONValue
    /// Scope name → the version it had when the current schema took over (merged with earlier ones).
    var boundaries: [String: Int]

    init(fingerprint: String, schema: JSONValue, boundaries: [String: Int]) {
        self.fingerprint = fingerprint
        self.schema = schema
        self.boundaries = boundaries
    }

    /// Reads a stored record; nil when it is not one (an unreadable record is treated as none: the
    /// data is translated, which is always safe).
    init?(bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes), let fingerprint = json["fingerprint"]?.string else {
            return nil
        }
        var boundaries: [String: Int] = [:]
        if case .object(let object)? = json["boundaries"] {
            for member in object {
                if let version = member.value.number?.int64Value { boundaries[member.key] = Int(version) }
            }
        }
        self.init(fingerprint: fingerprint, schema: json["schema"] ?? .null, boundaries: boundaries)
    }

    var bytes: [UInt8] {
        var boundaryObject = JSONObject()
        for (name, version) in boundaries.sorted(by: { $0.key < $1.key }) {
            boundaryObject.appendUnchecked(key: name, value: .number(JSONNumber(version)))
        }
        let json: JSONValue = [
            "fingerprint": .string(fingerprint), "schema": schema, "boundaries": .object(boundaryObject),
        ]
        return json.encoded()
    }
}
