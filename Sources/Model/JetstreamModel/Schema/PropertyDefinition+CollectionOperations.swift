import Foundation
import JetstreamJSON

extension PropertyDefinition {
    /// Checks a JSON value against this property and returns the value to store; on a collection, an
    /// operations object (``CollectionOperation``) is resolved against `current`, the value the
    /// property has at this point of the change set.
    ///
    /// `current` is nil where operations are not allowed (an `add`, which gives the whole value):
    /// an operations object is then `type-mismatch`. Errors in an operations object name the
    /// collection (`property` = its name) and say which value is at fault (`insert[1]: …`).
    ///
    /// ```swift
    /// let tags = PropertyDefinition(name: "tags", type: .collection(.string))
    /// try tags.validate(["insert": ["b"], "before": "c"], current: .list([.string("c")]),
    ///                   limits: Limits()) { _ in nil }   // .list([.string("b"), .string("c")])
    /// ```
    public func validate(
        _ json: JSONValue, current: Value?, limits: Limits, classOf: (UUID) -> ModelClass?
    ) throws(FragmentError) -> Value {
        guard case .collection(let element) = type, case .object = json else {
            return try validate(json, limits: limits, classOf: classOf)
        }
        guard let current else {
            throw FragmentError(
                .typeMismatch, "operations (insert/remove) are only allowed in a change; an add gives the whole array",
                property: name)
        }
        let operation = try CollectionOperation(json: json, property: name)
        for (key, values) in [("insert", operation.insert), ("remove", operation.remove)]
        where values.count > limits.maxCollectionLength {
            throw FragmentError(
                .limitExceeded, "'\(key)' lists \(values.count) values; the limit is \(limits.maxCollectionLength)",
                property: name)
        }
        let result: Value
        switch current {
        case .references(let uuids):
            let resolved = try operation.enumeratedMap { (item, label, isInserted) throws(FragmentError) -> UUID in
                try operationReference(item, label: label, element: element, isInserted: isInserted, classOf: classOf)
            }
            result = .references(resolved.apply(to: uuids))
        case .list(let values):
            let resolved = try operation.enumeratedMap { (item, label, _) throws(FragmentError) -> Value in
                try operationValue(item, label: label, element: element, limits: limits)
            }
            result = .list(resolved.apply(to: values))
        default:
            throw FragmentError(.typeMismatch, "the stored value is not a collection", property: name)
        }
        let count = result.collectionCount
        guard count <= limits.maxCollectionLength else {
            throw FragmentError(
                .limitExceeded, "the operations leave \(count) elements; the limit is \(limits.maxCollectionLength)",
                property: name)
        }
        if let maxCount = constraints.maxCount, count > maxCount {
            throw FragmentError(
                .constraintViolation, "the operations leave \(count) elements; maxCount is \(maxCount)",
                property: name)
        }
        return result
    }

    /// An inserted reference is checked like an array element (it must name an object of the
    /// class); a removed one or the anchor only needs to be a UUID: another writer may have deleted
    /// that object meanwhile, and a value that is not there is ignored.
    private func operationReference(
        _ item: JSONValue, label: String, element: PropertyType, isInserted: Bool, classOf: (UUID) -> ModelClass?
    ) throws(FragmentError) -> UUID {
        if isInserted {
            return try operationValue(item, label: label, element: element, limits: .unlimited, classOf: classOf)
                .referenceValue!
        }
        if case .null = item {
            throw FragmentError(.nullNotAllowed, "\(label): collection elements are never null", property: name)
        }
        guard case .string(let string) = item else {
            throw FragmentError(
                .typeMismatch, "\(label): expected a UUID string, got \(item.typeDescription)", property: name)
        }
        guard let uuid = UUID(wireString: string) else {
            throw FragmentError(.typeMismatch, "\(label): '\(string)' is not a UUID", property: name)
        }
        return uuid
    }

    /// A value of the collection, checked like an array element (type, range, enum, string
    /// constraints, reference target), with `property` = the collection and the position in the message.
    private func operationValue(
        _ item: JSONValue, label: String, element: PropertyType, limits: Limits,
        classOf: (UUID) -> ModelClass? = { _ in nil }
    ) throws(FragmentError) -> Value {
        if case .null = item {
            throw FragmentError(.nullNotAllowed, "\(label): collection elements are never null", property: name)
        }
        do {
            return try validateScalar(item, type: element, property: name, limits: limits, classOf: classOf)
        } catch {
            throw FragmentError(error.kind, "\(label): \(error.message)", property: name)
        }
    }
}

extension CollectionOperation where Element == JSONValue {
    /// Maps each value with its label (`insert[2]`, `remove[0]`, `before`) and whether it is inserted.
    fileprivate func enumeratedMap<Mapped>(
        _ transform: (JSONValue, String, Bool) throws(FragmentError) -> Mapped
    ) throws(FragmentError) -> CollectionOperation<Mapped> {
        var removed: [Mapped] = []
        removed.reserveCapacity(remove.count)
        for (index, item) in remove.enumerated() { removed.append(try transform(item, "remove[\(index)]", false)) }
        var inserted: [Mapped] = []
        inserted.reserveCapacity(insert.count)
        for (index, item) in insert.enumerated() { inserted.append(try transform(item, "insert[\(index)]", true)) }
        let anchor = try before.map { item throws(FragmentError) in try transform(item, "before", false) }
        return CollectionOperation<Mapped>(remove: removed, insert: inserted, before: anchor)
    }
}

extension Value {
    /// The number of elements of a collection value (0 for anything else).
    fileprivate var collectionCount: Int {
        switch self {
        case .references(let uuids): uuids.count
        case .list(let values): values.count
        default: 0
        }
    }
}
