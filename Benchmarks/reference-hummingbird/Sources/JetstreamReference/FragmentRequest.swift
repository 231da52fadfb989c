import Foundation

/// A fragment as a client sent it, read strictly from the decoded JSON so that one malformed
/// fragment gets a `malformed-fragment` reply instead of failing the whole body.
struct FragmentRequest: Sendable {
    let type: FragmentType
    let uuid: UUID
    let clsName: String
    let properties: [String: JSONValue]

    init(json: JSONValue) throws(FragmentError) {
        guard case .object(let object) = json else {
            throw FragmentError(.malformedFragment, "a fragment must be an object, got \(json.typeName)")
        }
        if let unknown = object.keys.first(where: { !["type", "uuid", "clsName", "properties"].contains($0) }) {
            throw FragmentError(.malformedFragment, "unknown fragment key '\(unknown)'")
        }
        guard case .string(let typeText) = object["type"], let type = FragmentType(rawValue: typeText) else {
            throw FragmentError(.malformedFragment, "'type' must be \"add\" or \"change\"")
        }
        guard case .string(let uuidText) = object["uuid"], let uuid = UUID(uuidString: uuidText) else {
            throw FragmentError(.malformedFragment, "'uuid' must be a UUID string")
        }
        guard case .string(let clsName) = object["clsName"], !clsName.isEmpty else {
            throw FragmentError(.malformedFragment, "'clsName' must be a non-empty string")
        }
        var properties: [String: JSONValue] = [:]
        switch object["properties"] {
        case nil: break
        case .object(let value): properties = value
        case .some(let other):
            throw FragmentError(.malformedFragment, "'properties' must be an object, got \(other.typeName)")
        }
        self.type = type
        self.uuid = uuid
        self.clsName = clsName
        self.properties = properties
    }
}
