import Foundation
import JetstreamJSON

/// A stored object the current schema refuses, as `check-schema` and a refused start report it:
/// which object, which property, the value as stored and why.
///
/// ```swift
/// problem.description
/// // object 6f1c…(uuid) Card.points: stored 8: out-of-range: 8 is above max 5
/// ```
public struct StoredValueProblem: Sendable, Hashable, CustomStringConvertible {
    public var uuid: UUID
    public var className: String
    /// Nil when the object's class itself is the problem (a class the schema no longer has).
    public var property: String?
    /// The value as stored (nil when the class is the problem).
    public var value: JSONValue?
    public var kind: FragmentError.Kind
    public var reason: String

    public init(
        uuid: UUID, className: String, property: String?, value: JSONValue?, kind: FragmentError.Kind,
        reason: String
    ) {
        self.uuid = uuid
        self.className = className
        self.property = property
        self.value = value
        self.kind = kind
        self.reason = reason
    }

    public var description: String {
        let target = property.map { "\(className).\($0)" } ?? className
        let stored = value.map { ": stored \($0.encodedString())" } ?? ""
        return "object \(uuid.wireString) \(target)\(stored): \(kind.rawValue): \(reason)"
    }

    /// `{"uuid","class","property","value","kind","reason"}` (property and value `null` when the
    /// class is the problem).
    public var jsonValue: JSONValue {
        [
            "uuid": .string(uuid.wireString), "class": .string(className),
            "property": property.map(JSONValue.string) ?? .null, "value": value ?? .null,
            "kind": .string(kind.rawValue), "reason": .string(reason),
        ]
    }
}
