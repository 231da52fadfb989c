import Foundation
import JetstreamModel

/// A Swift type that a `@Synced` or `@Local` property of a ``ModelObject`` can hold.
///
/// The framework ships conformances for every type of the schema: `String`, `Bool`, the fixed-width
/// integers, `Float`, `Double`, `Date`, ``Color``, ``ModelEnum`` types, ``ModelObject`` subclasses
/// (as optionals), arrays of these, and optionals of the scalars.
///
/// ```swift
/// final class Shape: ModelObject {
///     @Synced var x: Float = 0
///     @Synced var tags: [String] = []
///     @Synced var color: Color? = nil
/// }
/// ```
public protocol PropertyValue: Equatable {
    /// The schema type of the property (for an optional, the wrapped type's).
    static var propertyType: PropertyType { get }

    /// Whether `null` is a value of the type (optionals).
    static var isNullable: Bool { get }

    /// The value as the model core stores it and fragments carry it.
    var modelValue: JetstreamModel.Value { get }

    /// The Swift value for a value the model core validated; references are resolved with `resolve`.
    /// `nil` when the value does not fit (the model core's validation makes that a bug, not input).
    static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Self?

    /// The model objects this value refers to (a reference, or the elements of a model collection).
    var referencedObjects: [ModelObject] { get }

    /// The elements added and removed between two values of a collection; `nil` for non-collections.
    static func elementChanges(from old: Self, to new: Self) -> ElementChanges?

    /// This value without its references to `object`, or `nil` when it holds none.
    func removingReferences(to object: ModelObject) -> Self?

    /// The model class a reference or model collection holds; `nil` for other values.
    static var referencedModelType: ModelObject.Type? { get }
}

/// The elements that a collection property gained and lost in one assignment (a multiset difference).
public struct ElementChanges {
    /// Elements of the new value that the old one did not have (counting duplicates).
    public var added: [Any]
    /// Elements of the old value that the new one does not have (counting duplicates).
    public var removed: [Any]
}

/// A value that is not a collection or an optional: what an array or an optional may wrap.
public protocol ScalarPropertyValue: PropertyValue, Hashable {}

extension PropertyValue {
    public static var isNullable: Bool { false }
    public var referencedObjects: [ModelObject] { [] }
    public static func elementChanges(from old: Self, to new: Self) -> ElementChanges? { nil }
    public func removingReferences(to object: ModelObject) -> Self? { nil }
    public static var referencedModelType: ModelObject.Type? { nil }
}

extension String: ScalarPropertyValue {}
extension Bool: ScalarPropertyValue {}
extension Float: ScalarPropertyValue {}
extension Double: ScalarPropertyValue {}
extension Date: ScalarPropertyValue {}

extension Optional: PropertyValue where Wrapped: ScalarPropertyValue {
    public static var referencedModelType: ModelObject.Type? { Wrapped.referencedModelType }
    public var referencedObjects: [ModelObject] { self?.referencedObjects ?? [] }

    public func removingReferences(to object: ModelObject) -> Self? {
        guard let wrapped = self, (wrapped as? ModelObject) === object else { return nil }
        return .some(.none)
    }
}

extension Array: PropertyValue where Element: ScalarPropertyValue {
    public static var referencedModelType: ModelObject.Type? { Element.referencedModelType }
    public var referencedObjects: [ModelObject] { flatMap(\.referencedObjects) }

    public func removingReferences(to object: ModelObject) -> [Element]? {
        let kept = filter { ($0 as? ModelObject) !== object }
        return kept.count == count ? nil : kept
    }

    public static func elementChanges(from old: [Element], to new: [Element]) -> ElementChanges? {
        // Appends, removals at either end and single replacements touch only the middle: skip the
        // common prefix and suffix before counting.
        var prefix = 0
        while prefix < old.count && prefix < new.count && old[prefix] == new[prefix] {
            prefix += 1
        }
        var suffix = 0
        while suffix < old.count - prefix && suffix < new.count - prefix
            && old[old.count - 1 - suffix] == new[new.count - 1 - suffix]
        {
            suffix += 1
        }
        let oldMiddle = old[prefix..<(old.count - suffix)]
        let newMiddle = new[prefix..<(new.count - suffix)]
        var counts: [Element: Int] = [:]
        for element in oldMiddle {
            counts[element, default: 0] += 1
        }
        var added: [Any] = []
        for element in newMiddle {
            if let count = counts[element], count > 0 {
                counts[element] = count - 1
            } else {
                added.append(element)
            }
        }
        var removed: [Any] = []
        for element in oldMiddle.reversed() {
            if let count = counts[element], count > 0 {
                counts[element] = count - 1
                removed.append(element)
            }
        }
        return ElementChanges(added: added, removed: removed.reversed())
    }
}
