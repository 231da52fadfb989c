import Foundation

/// A normalised fragment as the reference stores and broadcasts it:
/// `{"type","uuid","clsName","properties"}` with a lowercase UUID.
struct Fragment: Sendable, Encodable {
    let type: FragmentType
    let uuid: UUID
    let clsName: String
    let properties: PropertyList

    private enum CodingKeys: String, CodingKey {
        case type, uuid, clsName, properties
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(uuid.wireString, forKey: .uuid)
        try container.encode(clsName, forKey: .clsName)
        try container.encode(properties, forKey: .properties)
    }
}
