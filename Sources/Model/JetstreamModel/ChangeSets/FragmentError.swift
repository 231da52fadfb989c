import JetstreamJSON

/// Why one fragment of a change set was refused. `kind` is the stable `type` on the wire.
///
/// ```swift
/// let error = FragmentError(.typeMismatch, "expected a number, got a string", property: "x")
/// error.jsonValue.encodedString()
/// // {"type":"type-mismatch","message":"expected a number, got a string","property":"x"}
/// ```
public struct FragmentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The complete list of error kinds (docs/model.md); raw values are the wire `type`.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case malformedFragment = "malformed-fragment"
        case unknownClass = "unknown-class"
        case unknownObject = "unknown-object"
        case classMismatch = "class-mismatch"
        case duplicateAdd = "duplicate-add"
        case unknownProperty = "unknown-property"
        case typeMismatch = "type-mismatch"
        case outOfRange = "out-of-range"
        case constraintViolation = "constraint-violation"
        case nullNotAllowed = "null-not-allowed"
        case missingReference = "missing-reference"
        case wrongClass = "wrong-class"
        case unattachedAdd = "unattached-add"
        case limitExceeded = "limit-exceeded"
        /// A write or removal the schema's `rules`/`write` reserve for the owner or a role.
        case forbidden
        /// A change to an `immutable` property after the object's add.
        case immutable
    }

    /// The error kind; its raw value is the wire `type`.
    public let kind: Kind
    /// A sentence a person can act on.
    public let message: String
    /// The property at fault (`cards[1]` for an element of a collection), when there is one.
    public let property: String?

    /// An error of `kind` with a readable message and, when one is at fault, the property.
    public init(_ kind: Kind, _ message: String, property: String? = nil) {
        self.kind = kind
        self.message = message
        self.property = property
    }

    /// `{"type":…,"message":…,"property":…}` (`property` omitted when nil).
    public var jsonValue: JSONValue {
        var object = JSONObject()
        object.appendUnchecked(key: "type", value: .string(kind.rawValue))
        object.appendUnchecked(key: "message", value: .string(message))
        if let property { object.appendUnchecked(key: "property", value: .string(property)) }
        return .object(object)
    }

    public var description: String {
        "\(kind.rawValue): \(message)" + (property.map { " (property \($0))" } ?? "")
    }

    func atProperty(_ name: String) -> FragmentError {
        FragmentError(kind, message, property: property ?? name)
    }
}
