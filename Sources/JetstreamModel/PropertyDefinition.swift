/// One typed property of a model class.
///
/// ```swift
/// let width = PropertyDefinition(
///     name: "width", type: .float, defaultValue: .float(100), constraints: PropertyConstraints(min: 0))
/// ```
public struct PropertyDefinition: Sendable, Hashable {
    public let name: String
    public let type: PropertyType
    /// A trailing `?` in the schema. Collections are never nullable.
    public let isNullable: Bool
    /// The value an `add` gets when it leaves the property out.
    public let defaultValue: Value
    /// Whether the schema named a default (rather than the type's zero or `null`).
    public let hasExplicitDefault: Bool
    public let constraints: PropertyConstraints

    /// A property; without `defaultValue` it defaults to `null` when nullable, else the type's zero.
    /// ``Schema/init(classes:scopes:)`` checks the definition (default included) against its type.
    public init(
        name: String, type: PropertyType, isNullable: Bool = false, defaultValue: Value? = nil,
        constraints: PropertyConstraints = PropertyConstraints()
    ) {
        self.name = name
        self.type = type
        self.isNullable = isNullable
        self.hasExplicitDefault = defaultValue != nil
        self.defaultValue = defaultValue ?? (isNullable ? .null : Value.zero(of: type))
        self.constraints = constraints
    }
}
