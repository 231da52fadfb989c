import Foundation
import JetstreamJSON

/// One sync fragment in the original's wire format:
/// `{"type":"add","uuid":"5f0c…","clsName":"Shape","properties":{"x":10}}`.
///
/// Properties stay JSON until a change set validates them against the schema.
///
/// ```swift
/// let fragment = try SyncFragment(json: JSONParser.parse(body))
/// fragment.jsonValue.encodedString()
/// ```
public struct SyncFragment: Sendable, Hashable {
    public var type: FragmentType
    public var uuid: UUID
    public var clsName: String
    public var properties: JSONObject

    /// A fragment built in code (e.g. by a client recording local changes).
    public init(type: FragmentType, uuid: UUID, clsName: String, properties: JSONObject = JSONObject()) {
        self.type = type
        self.uuid = uuid
        self.clsName = clsName
        self.properties = properties
    }

    /// Reads a fragment strictly: an object with `type` (`add`/`change`), `uuid` (a UUID in any
    /// case), `clsName` (a non-empty string) and optionally `properties` (an object). Anything else,
    /// unknown keys included, is a `malformed-fragment` error.
    public init(json: JSONValue) throws(FragmentError) {
        guard case .object(let object) = json else {
            throw FragmentError(.malformedFragment, "a fragment must be an object, got \(json.typeDescription)")
        }
        var type: FragmentType?
        var uuid: UUID?
        var clsName: String?
        var properties = JSONObject()
        for member in object {
            switch member.key {
            case "type":
                guard case .string(let text) = member.value, let parsed = FragmentType(rawValue: text) else {
                    throw FragmentError(
                        .malformedFragment, "'type' must be \"add\" or \"change\", got \(member.value.encodedString())")
                }
                type = parsed
            case "uuid":
                guard case .string(let text) = member.value, let parsed = UUID(wireString: text) else {
                    throw FragmentError(
                        .malformedFragment, "'uuid' must be a UUID string, got \(member.value.encodedString())")
                }
                uuid = parsed
            case "clsName":
                guard case .string(let text) = member.value, !text.isEmpty else {
                    throw FragmentError(.malformedFragment, "'clsName' must be a non-empty string")
                }
                clsName = text
            case "properties":
                guard case .object(let parsed) = member.value else {
                    throw FragmentError(
                        .malformedFragment, "'properties' must be an object, got \(member.value.typeDescription)")
                }
                properties = parsed
            default:
                throw FragmentError(.malformedFragment, "unknown fragment key '\(member.key)'")
            }
        }
        guard let type else { throw FragmentError(.malformedFragment, "the fragment has no 'type'") }
        guard let uuid else { throw FragmentError(.malformedFragment, "the fragment has no 'uuid'") }
        guard let clsName else { throw FragmentError(.malformedFragment, "the fragment has no 'clsName'") }
        self.init(type: type, uuid: uuid, clsName: clsName, properties: properties)
    }

    /// `{"type","uuid","clsName","properties"}` with a lowercase UUID.
    public var jsonValue: JSONValue {
        .object(
            JSONObject([
                JSONObject.Member(key: "type", value: .string(type.rawValue)),
                JSONObject.Member(key: "uuid", value: .string(uuid.wireString)),
                JSONObject.Member(key: "clsName", value: .string(clsName)),
                JSONObject.Member(key: "properties", value: .object(properties)),
            ]))
    }

    /// Appends the fragment's JSON to a writer without building an intermediate tree.
    public func write(to writer: inout JSONWriter) {
        writer.writeRaw(type == .add ? #"{"type":"add","uuid":"# : #"{"type":"change","uuid":"#)
        writer.write(uuid: uuid)
        writer.writeRaw(#","clsName":"#)
        writer.write(string: clsName)
        writer.writeRaw(#","properties":"#)
        writer.write(object: properties)
        writer.writeRaw("}")
    }
}

/// Whether a fragment creates an object or changes one. There is no `remove`: an object leaves its
/// scope when it is no longer reachable from the root.
public enum FragmentType: String, Sendable, Hashable {
    case add
    case change
}
