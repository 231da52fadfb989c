/// What a property of the demo schema holds, with the constraints the reference checks.
enum PropertyKind: Sendable {
    /// A string, optionally at most `maxLength` characters long.
    case string(maxLength: Int?)
    /// A number, optionally at least `minimum`.
    case float(minimum: Double?)
    /// An RGBA colour packed into an unsigned 32-bit integer.
    case color
    /// One of a fixed list of strings.
    case enumeration([String])
    /// An ordered list of references to `Shape` objects (`Canvas.shapes`).
    case shapeList
}
