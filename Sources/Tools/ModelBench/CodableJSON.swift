import Foundation

/// What a Codable-based server would decode fragments into: the comparison point for JSONDecoder
/// and JSONEncoder.
enum CodableJSON: Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([CodableJSON])
    case object([String: CodableJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([CodableJSON].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: CodableJSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}

struct CodableFragment: Codable {
    var type: String
    var uuid: UUID
    var clsName: String
    var properties: [String: CodableJSON]
}

struct CodableState: Codable {
    var name: String
    var version: Int
    var rootUUID: UUID
    var fragments: [CodableFragment]
}
