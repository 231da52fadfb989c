import JetstreamJSON

/// The type of a model property, as named in a schema file.
///
/// ```swift
/// PropertyType(parsing: "[Shape]")   // .collection(.reference("Shape"))
/// PropertyType.uint8.name            // "UInt8"
/// ```
public indirect enum PropertyType: Sendable, Hashable, CustomStringConvertible {
    case string
    case bool
    case int8, int16, int32, int64, int
    case uint8, uint16, uint32, uint64, uint
    case float, double
    /// Seconds since 1970 as a JSON number (fraction allowed).
    case date
    /// `0xRRGGBBAA` as an integer in 0…4294967295.
    case color
    /// One of the listed strings or integers.
    case enumeration(EnumValues)
    /// A single reference to an object of the named class (or `null` when nullable).
    case reference(String)
    /// An ordered array; the element is a scalar type or a reference (`[Shape]`).
    case collection(PropertyType)

    /// The scalar type names a schema may use, with their types.
    public static let scalarNames: [(String, PropertyType)] = [
        ("String", .string), ("Bool", .bool),
        ("Int8", .int8), ("Int16", .int16), ("Int32", .int32), ("Int64", .int64), ("Int", .int),
        ("UInt8", .uint8), ("UInt16", .uint16), ("UInt32", .uint32), ("UInt64", .uint64), ("UInt", .uint),
        ("Float", .float), ("Double", .double), ("Date", .date), ("Color", .color),
    ]

    /// The type's name as a schema writes it (`Int32`, `Shape`, `[Shape]`, `enum`).
    public var name: String {
        switch self {
        case .enumeration: "enum"
        case .reference(let className): className
        case .collection(let element): "[\(element.name)]"
        default: PropertyType.scalarNames.first { $0.1 == self }!.0
        }
    }

    public var description: String { name }

    /// Parses a type name; anything that is not a scalar name is taken as a class reference (the
    /// schema checks that the class exists). Enums are declared with `enum:` and never parsed here.
    public init?(parsing text: String) {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("[") && trimmed.hasSuffix("]") {
            guard let element = PropertyType(parsing: String(trimmed.dropFirst().dropLast())),
                !element.isCollection
            else { return nil }
            self = .collection(element)
            return
        }
        if let scalar = PropertyType.scalarNames.first(where: { $0.0 == trimmed }) {
            self = scalar.1
            return
        }
        guard trimmed.isIdentifier else { return nil }
        self = .reference(trimmed)
    }

    /// True for `[T]`.
    public var isCollection: Bool {
        if case .collection = self { return true }
        return false
    }

    /// The referenced class of `Model` or `[Model]`.
    public var referencedClassName: String? {
        switch self {
        case .reference(let name): name
        case .collection(.reference(let name)): name
        default: nil
        }
    }

    /// True for every integer width, Color included.
    public var isInteger: Bool {
        switch self {
        case .int8, .int16, .int32, .int64, .int, .uint8, .uint16, .uint32, .uint64, .uint, .color: true
        default: false
        }
    }

    /// True for integers, Color, Float, Double and Date.
    public var isNumeric: Bool {
        switch self {
        case .float, .double, .date: true
        default: isInteger
        }
    }

    /// The inclusive range of an integer type, as signed/unsigned 64-bit bounds.
    var integerBounds: (min: Int64, max: UInt64)? {
        switch self {
        case .int8: (Int64(Int8.min), UInt64(Int8.max))
        case .int16: (Int64(Int16.min), UInt64(Int16.max))
        case .int32: (Int64(Int32.min), UInt64(Int32.max))
        case .int64, .int: (Int64.min, UInt64(Int64.max))
        case .uint8: (0, UInt64(UInt8.max))
        case .uint16: (0, UInt64(UInt16.max))
        case .uint32, .color: (0, UInt64(UInt32.max))
        case .uint64, .uint: (0, UInt64.max)
        default: nil
        }
    }

    var isUnsigned: Bool {
        switch self {
        case .uint8, .uint16, .uint32, .uint64, .uint, .color: true
        default: false
        }
    }
}

/// The allowed values of an enum property: all strings or all integers.
public enum EnumValues: Sendable, Hashable {
    case strings([String])
    case integers([Int64])

    var count: Int {
        switch self {
        case .strings(let values): values.count
        case .integers(let values): values.count
        }
    }

    var firstValue: Value? {
        switch self {
        case .strings(let values): values.first.map(Value.string)
        case .integers(let values): values.first.map(Value.int)
        }
    }

    func contains(_ value: Value) -> Bool {
        switch (self, value) {
        case (.strings(let values), .string(let string)): values.contains(string)
        case (.integers(let values), .int(let integer)): values.contains(integer)
        default: false
        }
    }
}

extension EnumValues {
    var listDescription: String {
        switch self {
        case .strings(let values): "[" + values.joined(separator: ", ") + "]"
        case .integers(let values): "[" + values.map(String.init).joined(separator: ", ") + "]"
        }
    }
}
