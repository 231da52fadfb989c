import Foundation
import JetstreamJSON

extension PropertyDefinition {
    /// Checks a JSON value against this property strictly and returns the stored value.
    ///
    /// Nothing is converted silently: a string for a number, `5.5` for an integer, an unknown enum
    /// value or a UUID of another class is an error naming this property.
    ///
    /// ```swift
    /// let x = PropertyDefinition(name: "x", type: .int8)
    /// try x.validate(300, limits: Limits()) { _ in nil }   // throws out-of-range
    /// ```
    /// - Parameter classOf: the class of the object a UUID names, or nil when there is none.
    public func validate(
        _ json: JSONValue, limits: Limits, classOf: (UUID) -> ModelClass?
    ) throws(FragmentError) -> Value {
        if case .null = json {
            if type.isCollection {
                throw FragmentError(.nullNotAllowed, "a collection is never null; send [] to empty it", property: name)
            }
            guard isNullable else {
                throw FragmentError(.nullNotAllowed, "'\(name)' is not nullable", property: name)
            }
            return .null
        }
        if case .collection(let element) = type {
            return try validateCollection(json, element: element, limits: limits, classOf: classOf)
        }
        return try validateScalar(json, type: type, property: name, limits: limits, classOf: classOf)
    }

    private func validateCollection(
        _ json: JSONValue, element: PropertyType, limits: Limits, classOf: (UUID) -> ModelClass?
    ) throws(FragmentError) -> Value {
        guard case .array(let elements) = json else {
            throw FragmentError(.typeMismatch, "expected an array, got \(json.typeDescription)", property: name)
        }
        guard elements.count <= limits.maxCollectionLength else {
            throw FragmentError(
                .limitExceeded, "\(elements.count) elements exceed the limit of \(limits.maxCollectionLength)",
                property: name)
        }
        if let maxCount = constraints.maxCount, elements.count > maxCount {
            throw FragmentError(
                .constraintViolation, "\(elements.count) elements exceed maxCount \(maxCount)", property: name)
        }
        if case .reference = element {
            var uuids: [UUID] = []
            uuids.reserveCapacity(elements.count)
            for (index, item) in elements.enumerated() {
                guard
                    case .reference(let uuid) = try validateScalar(
                        item, type: element, property: "\(name)[\(index)]", limits: limits, classOf: classOf)
                else { continue }
                uuids.append(uuid)
            }
            return .references(uuids)
        }
        var values: [Value] = []
        values.reserveCapacity(elements.count)
        for (index, item) in elements.enumerated() {
            let label = "\(name)[\(index)]"
            if case .null = item {
                throw FragmentError(.nullNotAllowed, "collection elements are never null", property: label)
            }
            values.append(try validateScalar(item, type: element, property: label, limits: limits, classOf: classOf))
        }
        return .list(values)
    }

    /// One scalar (or one element of a collection) checked against `type`; errors name `property`.
    func validateScalar(
        _ json: JSONValue, type: PropertyType, property: String, limits: Limits, classOf: (UUID) -> ModelClass?
    ) throws(FragmentError) -> Value {
        func mismatch(_ expected: String) -> FragmentError {
            FragmentError(.typeMismatch, "expected \(expected), got \(json.typeDescription)", property: property)
        }
        switch type {
        case .string:
            guard case .string(let string) = json else { throw mismatch("a string") }
            try checkString(string, property: property, limits: limits)
            return .string(string)
        case .bool:
            guard case .bool(let flag) = json else { throw mismatch("a boolean") }
            return .bool(flag)
        case .float, .double, .date:
            guard case .number(let number) = json else { throw mismatch("a number") }
            let double = number.doubleValue
            // Overflow and underflow alike: a number must not silently become infinite or 0.
            guard double.isFinite, double != 0 || Self.isZeroLiteral(number.text) else {
                throw FragmentError(.outOfRange, "\(number) does not fit a \(type.name)", property: property)
            }
            try checkBounds(double, text: number.text, property: property)
            if case .float = type {
                let float = Float(number.text) ?? .infinity
                guard float.isFinite, float != 0 || Self.isZeroLiteral(number.text) else {
                    throw FragmentError(.outOfRange, "\(number) does not fit a Float", property: property)
                }
                return .float(float)
            }
            return .double(double)
        case .enumeration(let values):
            return try validateEnum(json, values: values, property: property)
        case .reference(let className):
            guard case .string(let string) = json else { throw mismatch("a UUID string") }
            guard let uuid = UUID(wireString: string) else {
                throw FragmentError(.typeMismatch, "'\(string)' is not a UUID", property: property)
            }
            guard let target = classOf(uuid) else {
                throw FragmentError(
                    .missingReference, "no object \(uuid.wireString) in the scope or the change set",
                    property: property)
            }
            guard target.isKind(of: className) else {
                throw FragmentError(
                    .wrongClass, "\(uuid.wireString) is a \(target.name), expected a \(className)", property: property)
            }
            return .reference(uuid)
        case .collection:
            throw mismatch("a scalar")
        default:
            return try validateInteger(json, type: type, property: property)
        }
    }

    private func validateInteger(
        _ json: JSONValue, type: PropertyType, property: String
    ) throws(FragmentError) -> Value {
        guard case .number(let number) = json, number.isIntegerLiteral else {
            throw FragmentError(
                .typeMismatch,
                "expected an integer, got \(json.typeDescription)"
                    + (json.number.map { " (\($0))" } ?? ""), property: property)
        }
        let bounds = type.integerBounds!
        let outOfRange = FragmentError(
            .outOfRange, "\(number) does not fit a \(type.name) (\(bounds.min)…\(bounds.max))", property: property)
        let value: Value
        if type.isUnsigned {
            if number.isNegative, number.int64Value != 0 { throw outOfRange }
            guard let unsigned = number.isNegative ? 0 : number.uint64Value, unsigned <= bounds.max else {
                throw outOfRange
            }
            value = .uint(unsigned)
        } else {
            guard let signed = number.int64Value, signed >= bounds.min,
                signed >= 0 ? UInt64(signed) <= bounds.max : true
            else { throw outOfRange }
            value = .int(signed)
        }
        try checkBounds(value.doubleValue!, text: number.text, property: property)
        return value
    }

    private func validateEnum(
        _ json: JSONValue, values: EnumValues, property: String
    ) throws(FragmentError) -> Value {
        let value: Value
        switch (values, json) {
        case (.strings, .string(let string)): value = .string(string)
        case (.integers, .number(let number)) where number.isIntegerLiteral:
            guard let integer = number.int64Value else {
                throw FragmentError(.constraintViolation, "\(number) is not one of \(values)", property: property)
            }
            value = .int(integer)
        case (.strings, _):
            throw FragmentError(
                .typeMismatch, "expected one of the enum's strings, got \(json.typeDescription)", property: property)
        case (.integers, _):
            throw FragmentError(
                .typeMismatch, "expected one of the enum's integers, got \(json.typeDescription)", property: property)
        }
        guard values.contains(value) else {
            throw FragmentError(
                .constraintViolation, "\(json.encodedString()) is not one of \(values.listDescription)",
                property: property)
        }
        return value
    }

    private func checkString(_ string: String, property: String, limits: Limits) throws(FragmentError) {
        if string.utf8.count > limits.maxStringLength {
            throw FragmentError(
                .limitExceeded, "\(string.utf8.count) bytes exceed the limit of \(limits.maxStringLength)",
                property: property)
        }
        if let maxLength = constraints.maxLength, string.unicodeScalars.count > maxLength {
            throw FragmentError(
                .constraintViolation, "\(string.unicodeScalars.count) characters exceed maxLength \(maxLength)",
                property: property)
        }
        if let pattern = constraints.compiledPattern, !pattern.matchesWhole(string) {
            throw FragmentError(
                .constraintViolation, "'\(string)' does not match pattern \(constraints.pattern ?? "")",
                property: property)
        }
    }

    private func checkBounds(_ value: Double, text: String, property: String) throws(FragmentError) {
        if let min = constraints.min, value < min {
            throw FragmentError(.outOfRange, "\(text) is below min \(min)", property: property)
        }
        if let max = constraints.max, value > max {
            throw FragmentError(.outOfRange, "\(text) is above max \(max)", property: property)
        }
    }
}

extension PropertyDefinition {
    /// Whether a number literal is zero itself (`0`, `-0.00e5`), not a non-zero value too small
    /// for the type.
    static func isZeroLiteral(_ text: String) -> Bool {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "e"), UInt8(ascii: "E"): return true
            case UInt8(ascii: "1")...UInt8(ascii: "9"): return false
            default: continue
            }
        }
        return true
    }
}
