/// Why one fragment of a change set was refused; encodes as the gateway's
/// `{"type":…,"message":…,"property":…}`.
struct FragmentError: Error, Sendable, Encodable {
    /// The subset of the gateway's error kinds this reference can produce; raw values are the wire `type`.
    enum Kind: String, Sendable, Encodable {
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
    }

    let type: Kind
    let message: String
    let property: String?

    init(_ type: Kind, _ message: String, property: String? = nil) {
        self.type = type
        self.message = message
        self.property = property
    }
}
