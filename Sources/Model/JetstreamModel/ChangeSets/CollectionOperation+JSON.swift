import JetstreamJSON

extension CollectionOperation where Element == JSONValue {
    /// Reads an operations object: `{"remove":[…]}`, `{"insert":[…],"before":…}` or both.
    ///
    /// Each key is optional, but `remove` or `insert` must be there; `before` is a value or `null`
    /// (`null` and absent both mean the end). Any other key, or an `insert`/`remove` that is not an
    /// array, is `type-mismatch` on `property`. The values stay JSON: the property validates them.
    ///
    /// ```swift
    /// let operation = try CollectionOperation(json: ["insert": ["x"], "before": nil], property: "tags")
    /// operation.insert   // ["x"]
    /// ```
    public init(json: JSONValue, property: String) throws(FragmentError) {
        guard case .object(let object) = json else {
            throw FragmentError(
                .typeMismatch, "expected an array or an operations object, got \(json.typeDescription)",
                property: property)
        }
        var remove: [JSONValue]?
        var insert: [JSONValue]?
        var before: JSONValue?
        for member in object {
            switch member.key {
            case "remove", "insert":
                guard case .array(let values) = member.value else {
                    throw FragmentError(
                        .typeMismatch, "'\(member.key)' must be an array, got \(member.value.typeDescription)",
                        property: property)
                }
                if member.key == "remove" { remove = values } else { insert = values }
            case "before":
                before = member.value
            default:
                throw FragmentError(
                    .typeMismatch,
                    "unknown key '\(member.key)' in an operations object (allowed: remove, insert, before)",
                    property: property)
            }
        }
        guard remove != nil || insert != nil else {
            throw FragmentError(
                .typeMismatch, "an operations object needs 'remove' or 'insert' (or both)", property: property)
        }
        let anchor: JSONValue? = if case .null = before { nil } else { before }
        self.init(remove: remove ?? [], insert: insert ?? [], before: anchor)
    }
}

extension CollectionOperation {
    /// The operations object as a fragment carries it: `remove` when there is something to remove,
    /// `insert` and `before` (`null` for the end) when there is something to insert.
    ///
    /// ```swift
    /// CollectionOperation<Value>(insert: [.string("x")]).jsonValue(\.jsonValue).encodedString()
    /// // {"insert":["x"],"before":null}
    /// ```
    public func jsonValue(_ encode: (Element) -> JSONValue) -> JSONValue {
        var object = JSONObject()
        if !remove.isEmpty || insert.isEmpty {
            object.appendUnchecked(key: "remove", value: .array(remove.map(encode)))
        }
        if !insert.isEmpty {
            object.appendUnchecked(key: "insert", value: .array(insert.map(encode)))
            object.appendUnchecked(key: "before", value: before.map(encode) ?? .null)
        }
        return .object(object)
    }
}

extension CollectionOperation where Element == Value {
    /// The operations object with every value in its wire form (see ``jsonValue(_:)``).
    public var jsonValue: JSONValue { jsonValue(\.jsonValue) }
}
