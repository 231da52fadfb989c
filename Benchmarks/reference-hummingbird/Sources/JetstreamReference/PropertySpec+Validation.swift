import Foundation

extension PropertySpec {
    /// Checks one incoming JSON value against the declaration and returns the normalised value
    /// that is stored and broadcast (UUIDs lowercase).
    ///
    /// - Parameter className: the class of an object in the scope or added by the same change set,
    ///   nil when there is none; used to check the targets of `shapes`.
    func validate(_ value: JSONValue, className: (UUID) -> String?) throws(FragmentError) -> JSONValue {
        if case .null = value {
            guard nullable else {
                throw FragmentError(.nullNotAllowed, "'\(name)' is not nullable", property: name)
            }
            return .null
        }
        switch kind {
        case .string(let maxLength):
            guard case .string(let text) = value else { throw mismatch("a string", value) }
            if let maxLength, text.count > maxLength {
                throw FragmentError(
                    .constraintViolation, "'\(name)' is longer than \(maxLength) characters", property: name)
            }
            return value
        case .float(let minimum):
            guard case .number(let number) = value else { throw mismatch("a number", value) }
            if let minimum, number < minimum {
                throw FragmentError(.outOfRange, "\(number) is below min \(minimum)", property: name)
            }
            return value
        case .color:
            guard case .number(let number) = value, number.rounded() == number else {
                throw mismatch("an integer", value)
            }
            guard number >= 0, number <= Double(UInt32.max) else {
                throw FragmentError(.outOfRange, "\(number) is not a 32-bit colour", property: name)
            }
            return value
        case .enumeration(let allowed):
            guard case .string(let text) = value else { throw mismatch("a string", value) }
            guard allowed.contains(text) else {
                throw FragmentError(
                    .constraintViolation, "'\(text)' is not one of \(allowed.joined(separator: ", "))",
                    property: name)
            }
            return value
        case .shapeList:
            guard case .array(let elements) = value else { throw mismatch("an array of UUIDs", value) }
            var normalised: [JSONValue] = []
            normalised.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                let property = "\(name)[\(index)]"
                guard case .string(let text) = element, let uuid = UUID(uuidString: text) else {
                    throw FragmentError(
                        .typeMismatch, "expected a UUID string, got \(element.typeName)", property: property)
                }
                guard let target = className(uuid) else {
                    throw FragmentError(
                        .missingReference, "no object \(uuid.wireString) in the scope or the change set",
                        property: property)
                }
                guard target == DemoSchema.shape.name else {
                    throw FragmentError(
                        .wrongClass, "\(uuid.wireString) is a \(target), not a Shape", property: property)
                }
                normalised.append(.string(uuid.wireString))
            }
            return .array(normalised)
        }
    }

    private func mismatch(_ expected: String, _ value: JSONValue) -> FragmentError {
        FragmentError(.typeMismatch, "expected \(expected), got \(value.typeName)", property: name)
    }
}
