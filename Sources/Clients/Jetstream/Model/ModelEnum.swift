import Foundation
import JetstreamModel

/// An enumeration a model property can hold; on the wire it is its raw value.
///
/// ```swift
/// enum ShapeKind: String, ModelEnum { case rect, oval }
///
/// final class Shape: ModelObject {
///     @Synced var kind: ShapeKind = .rect
/// }
/// ```
/// The schema lists the cases in declaration order; the first is the default of a non-optional
/// property without an initial value in the schema.
public protocol ModelEnum: ScalarPropertyValue, RawRepresentable, CaseIterable, Hashable
where RawValue: ModelEnumRawValue {}

/// The raw value types a ``ModelEnum`` may use: `String` or `Int`.
public protocol ModelEnumRawValue: Hashable {
    static func enumValues(_ rawValues: [Self]) -> EnumValues
    var enumModelValue: JetstreamModel.Value { get }
    static func fromEnumModelValue(_ value: JetstreamModel.Value) -> Self?
}
extension String: ModelEnumRawValue {}
extension Int: ModelEnumRawValue {}

extension String {
    public static func enumValues(_ rawValues: [String]) -> EnumValues { .strings(rawValues) }
    public var enumModelValue: JetstreamModel.Value { .string(self) }
    public static func fromEnumModelValue(_ value: JetstreamModel.Value) -> String? { value.stringValue }
}

extension Int {
    public static func enumValues(_ rawValues: [Int]) -> EnumValues { .integers(rawValues.map(Int64.init)) }
    public var enumModelValue: JetstreamModel.Value { .int(Int64(self)) }
    public static func fromEnumModelValue(_ value: JetstreamModel.Value) -> Int? {
        value.int64Value.flatMap { Int(exactly: $0) }
    }
}

extension ModelEnum {
    public static var propertyType: PropertyType { .enumeration(RawValue.enumValues(allCases.map(\.rawValue))) }
    public var modelValue: JetstreamModel.Value { rawValue.enumModelValue }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Self? {
        RawValue.fromEnumModelValue(value).flatMap(Self.init(rawValue:))
    }
}
