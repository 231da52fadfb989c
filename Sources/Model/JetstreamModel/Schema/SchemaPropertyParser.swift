import JetstreamJSON

/// Reads one property of a schema: the short form (`x: Float`, `tags: [String]`, `color: Color?`)
/// or the long form (`width: { type: Float, default: 100, min: 0 }`, `kind: { enum: [rect, oval] }`).
enum SchemaPropertyParser {
    struct Problem: Error {
        let message: String
    }

    private static let longFormKeys: Set<String> = [
        "type", "enum", "default", "nullable", "min", "max", "maxLength", "pattern", "maxCount", "renamedFrom",
        "onInvalid", "write", "immutable",
    ]

    static func parse(name: String, spec: JSONValue) throws(Problem) -> PropertyDefinition {
        switch spec {
        case .string, .array:
            let (type, nullable) = try parseType(spec)
            return PropertyDefinition(name: name, type: type, isNullable: nullable)
        case .object(let object):
            return try parseLongForm(name: name, object: object)
        default:
            throw Problem(message: "expected a type name, [Type] or a mapping, got \(spec.typeDescription)")
        }
    }

    private static func parseLongForm(name: String, object: JSONObject) throws(Problem) -> PropertyDefinition {
        for key in object.keys where !longFormKeys.contains(key) {
            throw Problem(
                message: "unknown key '\(key)' (expected one of \(longFormKeys.sorted().joined(separator: ", ")))")
        }
        var type: PropertyType
        var nullable = false
        switch (object["type"], object["enum"]) {
        case (nil, nil): throw Problem(message: "needs 'type' or 'enum'")
        case (.some, .some): throw Problem(message: "has both 'type' and 'enum'")
        case (.some(let typeSpec), nil): (type, nullable) = try parseType(typeSpec)
        case (nil, .some(let values)): type = .enumeration(try parseEnumValues(values))
        }
        if let flag = object["nullable"] {
            guard case .bool(let value) = flag else { throw Problem(message: "'nullable' must be true or false") }
            nullable = nullable || value
        }
        let constraints = PropertyConstraints(
            min: try number(object, "min"), max: try number(object, "max"),
            maxLength: try count(object, "maxLength"), pattern: try string(object, "pattern"),
            maxCount: try count(object, "maxCount"))
        var defaultValue: Value?
        if let json = object["default"] {
            let probe = PropertyDefinition(name: name, type: type, isNullable: nullable, constraints: constraints)
            do {
                defaultValue = try probe.validate(json, limits: .unlimited) { _ in nil }
            } catch {
                throw Problem(message: "default \(json.encodedString()): \(error.message)")
            }
        }
        var onInvalid: InvalidValuePolicy?
        if case .null? = object["onInvalid"] {
            onInvalid = .null  // YAML reads a bare `null` as no value, not as the word
        } else if let text = try string(object, "onInvalid") {
            guard let policy = InvalidValuePolicy(rawValue: text) else {
                let choices = InvalidValuePolicy.allCases.map(\.rawValue).joined(separator: ", ")
                throw Problem(message: "'onInvalid' must be one of \(choices), got '\(text)'")
            }
            onInvalid = policy
        }
        var immutable = false
        if let flag = object["immutable"] {
            guard case .bool(let value) = flag else { throw Problem(message: "'immutable' must be true or false") }
            immutable = value
        }
        return PropertyDefinition(
            name: name, type: type, isNullable: nullable, defaultValue: defaultValue, constraints: constraints,
            renamedFrom: try string(object, "renamedFrom"), onInvalid: onInvalid,
            write: try writeRule(object, "write") ?? .any, isImmutable: immutable)
    }

    /// `any`, `owner` or `role:<name>` under `key`, nil when the key is absent.
    static func writeRule(_ object: JSONObject, _ key: String) throws(Problem) -> WriteRule? {
        guard let text = try string(object, key) else { return nil }
        guard let rule = WriteRule(parsing: text) else {
            throw Problem(message: "'\(key)' must be any, owner or role:<name>, got '\(text)'")
        }
        return rule
    }

    /// A class's `rules: { write: …, delete: … }`.
    static func parseClassRules(_ spec: JSONValue) throws(Problem) -> ClassRules {
        guard case .object(let object) = spec else {
            throw Problem(message: "'rules' must be a mapping like { write: owner, delete: owner }")
        }
        for key in object.keys where key != "write" && key != "delete" {
            throw Problem(message: "unknown key '\(key)' in 'rules' (expected write, delete)")
        }
        return ClassRules(
            write: try writeRule(object, "write") ?? .any, delete: try writeRule(object, "delete") ?? .any)
    }

    /// Whether a class member named `rules` is the class's rules rather than a property called
    /// `rules`: a mapping without `type` or `enum` (a property's long form always has one).
    static func isClassRules(_ spec: JSONValue) -> Bool {
        guard case .object(let object) = spec else { return false }
        return object["type"] == nil && object["enum"] == nil
    }

    private static func parseType(_ spec: JSONValue) throws(Problem) -> (PropertyType, Bool) {
        switch spec {
        case .string(let text):
            var name = text.trimmingSpaces
            var nullable = false
            if name.hasSuffix("?") {
                nullable = true
                name.removeLast()
            }
            guard let type = PropertyType(parsing: name) else { throw Problem(message: "unknown type '\(text)'") }
            return (type, nullable)
        case .array(let elements):
            guard elements.count == 1, case .string(let element) = elements[0] else {
                throw Problem(message: "a collection type is a list holding one type name, like [Shape]")
            }
            guard !element.hasSuffix("?") else { throw Problem(message: "collection elements cannot be nullable") }
            guard let type = PropertyType(parsing: "[\(element)]") else {
                throw Problem(message: "unknown type '[\(element)]'")
            }
            return (type, false)
        default:
            throw Problem(message: "a type must be a name or [Name], got \(spec.typeDescription)")
        }
    }

    private static func parseEnumValues(_ json: JSONValue) throws(Problem) -> EnumValues {
        guard case .array(let elements) = json, !elements.isEmpty else {
            throw Problem(message: "'enum' must be a non-empty list of strings or integers")
        }
        if elements.allSatisfy({ $0.string != nil }) { return .strings(elements.map { $0.string! }) }
        var integers: [Int64] = []
        for element in elements {
            guard let integer = element.number?.int64Value else {
                throw Problem(message: "'enum' values must be all strings or all integers")
            }
            integers.append(integer)
        }
        return .integers(integers)
    }

    private static func number(_ object: JSONObject, _ key: String) throws(Problem) -> Double? {
        guard let json = object[key] else { return nil }
        guard let number = json.number, number.doubleValue.isFinite else {
            throw Problem(message: "'\(key)' must be a number, got \(json.typeDescription)")
        }
        return number.doubleValue
    }

    private static func count(_ object: JSONObject, _ key: String) throws(Problem) -> Int? {
        guard let json = object[key] else { return nil }
        guard let value = json.number?.int64Value, value >= 0, let count = Int(exactly: value) else {
            throw Problem(message: "'\(key)' must be a non-negative integer")
        }
        return count
    }

    private static func string(_ object: JSONObject, _ key: String) throws(Problem) -> String? {
        guard let json = object[key] else { return nil }
        guard case .string(let string) = json else { throw Problem(message: "'\(key)' must be a string") }
        return string
    }
}
