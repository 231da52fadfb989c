import JetstreamJSON

extension Schema {
    /// The schema as JSON in the long form (what `GET /v1/schema` serves). ``parse(tree:)`` reads it
    /// back into an equal schema.
    ///
    /// ```swift
    /// Schema.demo.jsonValue.encodedString()
    /// // {"models":{"Canvas":{"name":{"type":"String?"},…}},"scopes":{"demo":{"root":"Canvas"},…}}
    /// ```
    public var jsonValue: JSONValue {
        var models = JSONObject()
        for modelClass in classes {
            models.appendUnchecked(key: modelClass.name, value: modelClass.jsonValue)
        }
        var scopeRules = JSONObject()
        for rule in scopes {
            scopeRules.appendUnchecked(key: rule.pattern, value: ["root": .string(rule.rootClassName)])
        }
        return ["models": .object(models), "scopes": .object(scopeRules)]
    }
}

extension PropertyDefinition {
    /// The long form of this property: `{"type":"Float","default":100.0,"min":0.0}`.
    public var jsonValue: JSONValue {
        var object = JSONObject()
        func enumValues(_ values: EnumValues) -> JSONValue {
            switch values {
            case .strings(let strings): .array(strings.map(JSONValue.string))
            case .integers(let integers): .array(integers.map { .number(JSONNumber($0)) })
            }
        }
        if case .enumeration(let values) = type {
            object.appendUnchecked(key: "enum", value: enumValues(values))
            if isNullable { object.appendUnchecked(key: "nullable", value: true) }
        } else {
            object.appendUnchecked(key: "type", value: .string(type.name + (isNullable ? "?" : "")))
        }
        if hasExplicitDefault { object.appendUnchecked(key: "default", value: defaultValue.jsonValue) }
        if let min = constraints.min { object.appendUnchecked(key: "min", value: .number(JSONNumber(min))) }
        if let max = constraints.max { object.appendUnchecked(key: "max", value: .number(JSONNumber(max))) }
        if let maxLength = constraints.maxLength {
            object.appendUnchecked(key: "maxLength", value: .number(JSONNumber(maxLength)))
        }
        if let pattern = constraints.pattern { object.appendUnchecked(key: "pattern", value: .string(pattern)) }
        if let maxCount = constraints.maxCount {
            object.appendUnchecked(key: "maxCount", value: .number(JSONNumber(maxCount)))
        }
        return .object(object)
    }
}
