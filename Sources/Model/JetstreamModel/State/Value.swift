import Foundation
import JetstreamJSON

/// A validated property value, stored in a ``ScopeObject``.
///
/// Which case a property holds follows from its ``PropertyType``: signed integers are `.int`,
/// unsigned integers and Color are `.uint`, Float is `.float`, Double and Date are `.double`
/// (Date in seconds since 1970), strings and string enums are `.string`, integer enums are `.int`.
///
/// ```swift
/// let x: Value = .float(10)
/// x.jsonValue.encodedString()   // "10.0"
/// ```
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case float(Float)
    case double(Double)
    case string(String)
    case reference(UUID)
    case references([UUID])
    case list([Value])

    /// The value as it travels in a fragment: lowercase UUID strings, numbers in their shortest form.
    public var jsonValue: JSONValue {
        switch self {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let integer): .number(JSONNumber(integer))
        case .uint(let integer): .number(JSONNumber(integer))
        case .float(let float): .number(JSONNumber(float))
        case .double(let double): .number(JSONNumber(double))
        case .string(let string): .string(string)
        case .reference(let uuid): .string(uuid.wireString)
        case .references(let uuids): .array(uuids.map { .string($0.wireString) })
        case .list(let values): .array(values.map(\.jsonValue))
        }
    }

    /// The UUIDs this value refers to, in order, duplicates included.
    public var referencedUUIDs: [UUID] {
        switch self {
        case .reference(let uuid): [uuid]
        case .references(let uuids): uuids
        default: []
        }
    }

    /// The elements of a collection value, a `[Model]`'s as `.reference`s; nil for a scalar.
    ///
    /// ```swift
    /// Value.list([.int(1), .int(2)]).collectionElements   // [.int(1), .int(2)]
    /// ```
    public var collectionElements: [Value]? {
        switch self {
        case .references(let uuids): uuids.map(Value.reference)
        case .list(let values): values
        default: nil
        }
    }

    /// The zero value of a type: `""`, `0`, `false`, `[]`, an enum's first value; `null` for a
    /// reference.
    public static func zero(of type: PropertyType) -> Value {
        switch type {
        case .string: .string("")
        case .bool: .bool(false)
        case .int8, .int16, .int32, .int64, .int: .int(0)
        case .uint8, .uint16, .uint32, .uint64, .uint, .color: .uint(0)
        case .float: .float(0)
        case .double, .date: .double(0)
        case .enumeration(let values): values.firstValue ?? .null
        case .reference: .null
        case .collection(.reference): .references([])
        case .collection: .list([])
        }
    }

    /// The flag of a `.bool`.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The text of a `.string`.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// An `.int`, or a `.uint` that fits.
    public var int64Value: Int64? {
        switch self {
        case .int(let integer): integer
        case .uint(let integer): Int64(exactly: integer)
        default: nil
        }
    }

    /// Any numeric value as a Double.
    public var doubleValue: Double? {
        switch self {
        case .int(let integer): Double(integer)
        case .uint(let integer): Double(integer)
        case .float(let float): Double(float)
        case .double(let double): double
        default: nil
        }
    }

    /// The UUID of a `.reference`.
    public var referenceValue: UUID? {
        if case .reference(let uuid) = self { return uuid }
        return nil
    }
}

extension Value {
    /// Writes the value's fragment JSON straight into a writer: the same bytes as
    /// `jsonValue.encoded()`, without building the tree.
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.writeRaw("null")
        case .bool(let flag): writer.writeRaw(flag ? "true" : "false")
        case .int(let integer): writer.writeRaw(String(integer))
        case .uint(let integer): writer.writeRaw(String(integer))
        case .float(let float): writer.writeRaw(JSONNumber(float).text)
        case .double(let double): writer.writeRaw(JSONNumber(double).text)
        case .string(let string): writer.write(string: string)
        case .reference(let uuid): writer.write(uuid: uuid)
        case .references(let uuids):
            writer.writeRaw("[")
            for (index, uuid) in uuids.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.write(uuid: uuid)
            }
            writer.writeRaw("]")
        case .list(let values):
            writer.writeRaw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                value.write(to: &writer)
            }
            writer.writeRaw("]")
        }
    }
}
