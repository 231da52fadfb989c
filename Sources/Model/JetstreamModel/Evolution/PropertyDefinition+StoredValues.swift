import Foundation
import JetstreamJSON

extension PropertyDefinition {
    /// Why this property refuses a stored value, nil when it fits. References are checked for their
    /// form only (the object they name is the state's business); an operations object's inserted
    /// elements are checked one by one.
    func refusal(of json: JSONValue) -> FragmentError? {
        if case .collection(let element) = type, case .object(let operations) = json {
            guard case .array(let inserted)? = operations["insert"] else { return nil }
            for (index, item) in inserted.enumerated() {
                if let error = refusal(ofElement: item, type: element, label: "\(name)[\(index)]") { return error }
            }
            return nil
        }
        if type.referencedClassName != nil {
            return referenceRefusal(of: json)
        }
        do {
            _ = try validate(json, limits: .unlimited) { _ in nil }
            return nil
        } catch {
            return error
        }
    }

    private func referenceRefusal(of json: JSONValue) -> FragmentError? {
        switch (type, json) {
        case (.collection, .array(let elements)):
            if let maxCount = constraints.maxCount, elements.count > maxCount {
                return FragmentError(
                    .constraintViolation, "\(elements.count) elements exceed maxCount \(maxCount)", property: name)
            }
            for (index, item) in elements.enumerated() {
                if let error = refusal(ofElement: item, type: .reference(""), label: "\(name)[\(index)]") {
                    return error
                }
            }
            return nil
        case (.collection, _):
            return FragmentError(.typeMismatch, "expected an array, got \(json.typeDescription)", property: name)
        case (_, .null):
            return isNullable ? nil : FragmentError(.nullNotAllowed, "'\(name)' is not nullable", property: name)
        default:
            return refusal(ofElement: json, type: type, label: name)
        }
    }

    private func refusal(ofElement json: JSONValue, type: PropertyType, label: String) -> FragmentError? {
        if case .reference = type {
            guard case .string(let text) = json, UUID(wireString: text) != nil else {
                return FragmentError(
                    .typeMismatch, "expected a UUID string, got \(json.typeDescription)", property: label)
            }
            return nil
        }
        do {
            _ = try validateScalar(json, type: type, property: label, limits: .unlimited) { _ in nil }
            return nil
        } catch {
            return error
        }
    }

    /// The nearest value that fits (`onInvalid: clamp`), nil when there is none: a number into
    /// `min`…`max` and its type's range (an integer type rounds toward zero), a string cut to
    /// `maxLength`, a collection's elements clamped (those that cannot be, dropped) and the whole cut
    /// to `maxCount`.
    func clamped(_ json: JSONValue) -> JSONValue? {
        switch (type, json) {
        case (.collection(let element), .array(let elements)):
            var kept = elements.compactMap { clamped($0, as: element) }
            if let maxCount = constraints.maxCount, kept.count > maxCount { kept.removeLast(kept.count - maxCount) }
            return .array(kept)
        case (.collection(let element), .object(var operations)):
            if case .array(let inserted)? = operations["insert"] {
                operations["insert"] = .array(inserted.compactMap { clamped($0, as: element) })
            }
            return .object(operations)
        case (.collection, _):
            return nil
        default:
            return clamped(json, as: type)
        }
    }

    private func clamped(_ json: JSONValue, as type: PropertyType) -> JSONValue? {
        switch (type, json) {
        case (.string, .string(let string)):
            guard let maxLength = constraints.maxLength, string.unicodeScalars.count > maxLength else { return json }
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: string.unicodeScalars.prefix(maxLength))
            return .string(String(scalars))
        case (_, .number(let number)) where type.isNumeric:
            return clamped(number.doubleValue, as: type)
        default:
            // Spelled out: `nil` alone would be JSON's null (JSONValue is nil-literal expressible).
            return refusal(ofElement: json, type: type, label: name) == nil ? json : Optional<JSONValue>.none
        }
    }

    private func clamped(_ value: Double, as type: PropertyType) -> JSONValue? {
        guard value.isFinite else { return nil }
        var low = constraints.min ?? -.infinity
        var high = constraints.max ?? .infinity
        if let bounds = type.integerBounds {
            let clamped = Swift.min(Swift.max(value.rounded(.towardZero), low.rounded(.up)), high.rounded(.down))
            // Double cannot hold Int64.max or UInt64.max (they round up, out of the type): the
            // type's own bounds are taken as integers.
            if clamped <= Double(bounds.min) { return .number(JSONNumber(bounds.min)) }
            if clamped >= Double(bounds.max) { return .number(JSONNumber(bounds.max)) }
            if clamped < 0 { return Int64(exactly: clamped).map { .number(JSONNumber($0)) } }
            return UInt64(exactly: clamped).map { .number(JSONNumber($0)) }
        }
        if case .float = type {
            high = Swift.min(high, Double(Float.greatestFiniteMagnitude))
            low = Swift.max(low, -Double(Float.greatestFiniteMagnitude))
        }
        return .number(JSONNumber(Swift.min(Swift.max(value, low), high)))
    }
}
