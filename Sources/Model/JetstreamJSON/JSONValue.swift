/// A JSON value as it appeared on the wire: numbers keep their exact digits (and whether they were
/// written as integers), objects keep their key order.
///
/// The gateway parses request bodies into `JSONValue` with ``JSONParser`` and writes events with
/// ``JSONWriter``; the model core validates fragment properties from it against the schema.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"x":10,"tags":["a"]}"#.utf8))
/// value["x"]?.number?.int64Value   // 10
/// ```
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The number, when this is one.
    public var number: JSONNumber? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The elements, when this is an array.
    public var array: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// The members, when this is an object.
    public var object: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// A short name of the JSON type, for error messages ("a string", "null", …).
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let number): number.isIntegerLiteral ? "an integer" : "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Encodes this value as compact JSON bytes.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }

    /// Encodes this value as a compact JSON string.
    public func encodedString() -> String {
        String(decoding: encoded(), as: UTF8.self)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = .number(JSONNumber(value)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { JSONObject.Member(key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
}
