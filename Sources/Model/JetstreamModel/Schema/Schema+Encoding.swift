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
        if let renamedFrom { object.appendUnchecked(key: "renamedFrom", value: .string(renamedFrom)) }
        if let onInvalid { object.appendUnchecked(key: "onInvalid", value: .string(onInvalid.rawValue)) }
        if write != .any { object.appendUnchecked(key: "write", value: .string(write.description)) }
        if isImmutable { object.appendUnchecked(key: "immutable", value: true) }
        return .object(object)
    }
}

extension Schema {
    /// The schema's identity: 32 hex digits from its long-form JSON (two 64-bit FNV-1a hashes with
    /// different offsets). Equal schemas have equal fingerprints; any change to a class, property,
    /// constraint or scope rule changes it. `GET /v1/schema` serves it as its `ETag`, and the store
    /// records it to know when it is served under another schema. An identity, not a signature.
    ///
    /// ```swift
    /// Schema.demo.fingerprint   // "9c1d…" (32 hex digits)
    /// ```
    public var fingerprint: String {
        let bytes = Array(jsonValue.encodedString().utf8)
        func fnv1a(_ offset: UInt64) -> UInt64 {
            var hash = offset
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
            return hash
        }
        let first = fnv1a(0xCBF2_9CE4_8422_2325)
        let second = fnv1a(0x6C62_272E_07BB_0142)
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(first) + hex(second)
    }
}
