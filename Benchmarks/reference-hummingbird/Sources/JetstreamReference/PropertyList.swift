/// Properties in schema order, encoded as a JSON object (a dictionary would lose the order).
struct PropertyList: Sendable, Encodable {
    var entries: [(name: String, value: JSONValue)]

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for entry in entries {
            try container.encode(entry.value, forKey: Key(stringValue: entry.name))
        }
    }
}
