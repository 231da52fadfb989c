import Foundation

/// A fragment as a client sent it: `{"type","uuid","clsName","properties"?}`, read strictly (unknown
/// keys included) into a `malformed-fragment` error. ``FragmentEntry`` catches that error so one
/// malformed fragment gets its own reply instead of failing the whole body.
struct FragmentRequest: Sendable, Decodable {
    let type: FragmentType
    let uuid: UUID
    let clsName: String
    let properties: [String: JSONValue]

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case type, uuid, clsName, properties
    }

    /// Accepts any key so unknown ones can be named in the error.
    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let allKeys = try decoder.container(keyedBy: AnyKey.self).allKeys
        if let unknown = allKeys.first(where: { CodingKeys(stringValue: $0.stringValue) == nil }) {
            throw FragmentError(.malformedFragment, "unknown fragment key '\(unknown.stringValue)'")
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let typeText = try? container.decode(String.self, forKey: .type),
            let type = FragmentType(rawValue: typeText)
        else {
            throw FragmentError(.malformedFragment, "'type' must be \"add\" or \"change\"")
        }
        guard let uuidText = try? container.decode(String.self, forKey: .uuid), let uuid = UUID(uuidString: uuidText)
        else {
            throw FragmentError(.malformedFragment, "'uuid' must be a UUID string")
        }
        guard let clsName = try? container.decode(String.self, forKey: .clsName), !clsName.isEmpty else {
            throw FragmentError(.malformedFragment, "'clsName' must be a non-empty string")
        }
        guard let properties = try? container.decodeIfPresent([String: JSONValue].self, forKey: .properties) ?? [:]
        else {
            throw FragmentError(.malformedFragment, "'properties' must be an object")
        }
        self.type = type
        self.uuid = uuid
        self.clsName = clsName
        self.properties = properties
    }
}
