import Foundation
import JetstreamJSON
import Yams

/// Converts a composed YAML tree into the JSON tree the schema parser reads, keeping key order.
enum YAMLTree {
    static func json(from node: Node, path: String) throws(SchemaError) -> JSONValue {
        switch node {
        case .scalar(let scalar):
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: return .null
            case .bool:
                guard let flag = node.bool else { throw SchemaError(message: "\(path): invalid boolean") }
                return .bool(flag)
            case .int:
                guard let number = JSONNumber(text: scalar.string.replacingOccurrences(of: "_", with: "")),
                    number.isIntegerLiteral
                else { throw SchemaError(message: "\(path): unsupported integer \(scalar.string)") }
                return .number(number)
            case .float:
                guard let double = node.float, double.isFinite else {
                    throw SchemaError(message: "\(path): unsupported number \(scalar.string)")
                }
                return .number(JSONNumber(double))
            default:
                return .string(scalar.string)
            }
        case .sequence(let sequence):
            var elements: [JSONValue] = []
            for (index, element) in sequence.enumerated() {
                elements.append(try json(from: element, path: "\(path)[\(index)]"))
            }
            return .array(elements)
        case .mapping(let mapping):
            var object = JSONObject()
            for (key, value) in mapping {
                guard case .scalar(let keyScalar) = key else {
                    throw SchemaError(message: "\(path): mapping keys must be plain strings")
                }
                let name = keyScalar.string
                guard object[name] == nil else { throw SchemaError(message: "\(path): key '\(name)' appears twice") }
                object.appendUnchecked(key: name, value: try json(from: value, path: name))
            }
            return .object(object)
        case .alias:
            throw SchemaError(message: "\(path): YAML aliases are not supported in a schema")
        }
    }
}
