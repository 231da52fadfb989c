import Foundation
import JetstreamModel

extension String {
    public static var propertyType: PropertyType { .string }
    public var modelValue: JetstreamModel.Value { .string(self) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> String? {
        value.stringValue
    }
}

extension Bool {
    public static var propertyType: PropertyType { .bool }
    public var modelValue: JetstreamModel.Value { .bool(self) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Bool? {
        value.boolValue
    }
}

/// Shared encoding of the signed integer widths.
public protocol SignedModelInteger: FixedWidthInteger, SignedInteger, ScalarPropertyValue {
    static var signedPropertyType: PropertyType { get }
}

extension SignedModelInteger {
    public static var propertyType: PropertyType { signedPropertyType }
    public var modelValue: JetstreamModel.Value { .int(Int64(self)) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Self? {
        switch value {
        case .int(let integer): Self(exactly: integer)
        case .uint(let integer): Self(exactly: integer)
        default: nil
        }
    }
}

/// Shared encoding of the unsigned integer widths.
public protocol UnsignedModelInteger: FixedWidthInteger, UnsignedInteger, ScalarPropertyValue {
    static var unsignedPropertyType: PropertyType { get }
}

extension UnsignedModelInteger {
    public static var propertyType: PropertyType { unsignedPropertyType }
    public var modelValue: JetstreamModel.Value { .uint(UInt64(self)) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Self? {
        switch value {
        case .int(let integer): Self(exactly: integer)
        case .uint(let integer): Self(exactly: integer)
        default: nil
        }
    }
}

extension Int: SignedModelInteger { public static var signedPropertyType: PropertyType { .int } }
extension Int8: SignedModelInteger { public static var signedPropertyType: PropertyType { .int8 } }
extension Int16: SignedModelInteger { public static var signedPropertyType: PropertyType { .int16 } }
extension Int32: SignedModelInteger { public static var signedPropertyType: PropertyType { .int32 } }
extension Int64: SignedModelInteger { public static var signedPropertyType: PropertyType { .int64 } }
extension UInt: UnsignedModelInteger { public static var unsignedPropertyType: PropertyType { .uint } }
extension UInt8: UnsignedModelInteger { public static var unsignedPropertyType: PropertyType { .uint8 } }
extension UInt16: UnsignedModelInteger { public static var unsignedPropertyType: PropertyType { .uint16 } }
extension UInt32: UnsignedModelInteger { public static var unsignedPropertyType: PropertyType { .uint32 } }
extension UInt64: UnsignedModelInteger { public static var unsignedPropertyType: PropertyType { .uint64 } }

extension Float {
    public static var propertyType: PropertyType { .float }
    public var modelValue: JetstreamModel.Value { .float(self) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Float? {
        if case .float(let float) = value { return float }
        return value.doubleValue.map(Float.init)
    }
}

extension Double {
    public static var propertyType: PropertyType { .double }
    public var modelValue: JetstreamModel.Value { .double(self) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Double? {
        value.doubleValue
    }
}

extension Date {
    public static var propertyType: PropertyType { .date }
    /// Seconds since 1970, as everywhere on the wire.
    public var modelValue: JetstreamModel.Value { .double(timeIntervalSince1970) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Date? {
        value.doubleValue.map(Date.init(timeIntervalSince1970:))
    }
}

extension Color {
    public static var propertyType: PropertyType { .color }
    public var modelValue: JetstreamModel.Value { .uint(UInt64(rgba)) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Color? {
        switch value {
        case .uint(let integer): UInt32(exactly: integer).map(Color.init(rgba:))
        case .int(let integer): UInt32(exactly: integer).map(Color.init(rgba:))
        default: nil
        }
    }
}

extension ModelObject {
    public static var propertyType: PropertyType { .reference(className) }
    public var modelValue: JetstreamModel.Value { .reference(uuid) }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Self? {
        guard case .reference(let uuid) = value else { return nil }
        return resolve(uuid) as? Self
    }
}

extension Optional where Wrapped: ScalarPropertyValue {
    public static var propertyType: PropertyType { Wrapped.propertyType }
    public static var isNullable: Bool { true }
    public var modelValue: JetstreamModel.Value { self?.modelValue ?? .null }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> Wrapped?? {
        if case .null = value { return .some(.none) }
        return Wrapped.decode(value, resolve: resolve).map { .some($0) }
    }
}

extension Array where Element: ScalarPropertyValue {
    public static var propertyType: PropertyType { .collection(Element.propertyType) }
    public var modelValue: JetstreamModel.Value {
        if Element.referencedModelType != nil {
            return .references(flatMap(\.referencedObjects).map(\.uuid))
        }
        return .list(map(\.modelValue))
    }
    public static func decode(_ value: JetstreamModel.Value, resolve: (UUID) -> ModelObject?) -> [Element]? {
        var result: [Element] = []
        switch value {
        case .references(let uuids):
            for uuid in uuids {
                guard let element = Element.decode(.reference(uuid), resolve: resolve) else { return nil }
                result.append(element)
            }
        case .list(let values):
            for value in values {
                guard let element = Element.decode(value, resolve: resolve) else { return nil }
                result.append(element)
            }
        default:
            return nil
        }
        return result
    }
}
