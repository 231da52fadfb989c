import Foundation
import JetstreamJSON

/// An RFC 7396 merge patch of one object, turned into one change set: the REST way to write
/// (`PATCH /v1/scopes/{name}/objects/{uuid}`), with Uniform's merge by identity for nested objects.
///
/// - Each member sets that property; `null` sets it to null (the schema decides whether it may).
///   A collection member is a whole array or an operations object (`insert`/`before`/`remove`).
/// - Where a reference or a collection element is an **object** instead of a UUID string, it is
///   merged by its `"uuid"`: the object with that UUID is patched recursively when the scope has
///   it; otherwise it is added — its class is its `"clsName"`, or the property's declared class —
///   with defaults for what it does not give. Without a `"uuid"` a new object gets a fresh one.
/// - The fragments come in document order: the target's `change` first, then each nested object's
///   `add` or `change` where it appears. The change set is validated like any other; a rejection
///   is reported as ``MergePatchError``s whose `path` is a JSON Pointer into the patch.
///
/// ```swift
/// let patch = MergePatch(target: shape, document: ["x": 12, "label": ["uuid": label, "text": "hi"]])
/// let translation = try patch.translate(against: state, schema: schema)
/// switch state.applying(translation.fragments, schema: schema) {
/// case .accepted(let applied): …
/// case .rejected(let replies): translation.errors(for: replies)   // [{path: "/label/text", …}]
/// }
/// ```
public struct MergePatch: Sendable {
    /// The object the patch applies to.
    public let target: UUID
    /// The patch document; must be a JSON object.
    public let document: JSONValue

    public init(target: UUID, document: JSONValue) {
        self.target = target
        self.document = document
    }

    /// Why a patch cannot become a change set at all.
    public enum Failure: Error, Sendable, Hashable {
        /// The target is not in the scope.
        case objectNotFound(UUID)
        /// The patch is not shaped as one (not an object, a nested `uuid` that is not a UUID…).
        case invalid([MergePatchError])
    }

    /// The change set this patch makes against `state`. `newUUID` names nested objects given
    /// without a `"uuid"` (a parameter so tests can make it deterministic).
    public func translate(
        against state: ScopeState, schema: Schema, newUUID: @escaping () -> UUID = { UUID() }
    ) throws(Failure) -> MergePatchTranslation {
        guard let object = state.object(target) else { throw .objectNotFound(target) }
        guard case .object(let members) = document else {
            throw .invalid([
                MergePatchError(
                    path: "", kind: .typeMismatch,
                    message: "a merge patch of an object must be a JSON object, not \(document.typeDescription)")
            ])
        }
        var translator = Translator(state: state, schema: schema, newUUID: newUUID)
        translator.patch(members, of: target, modelClass: object.modelClass, isNew: false, at: "", isTarget: true)
        guard translator.errors.isEmpty else { throw .invalid(translator.errors) }
        return MergePatchTranslation(
            fragments: translator.fragments.map { $0! }, origins: translator.origins.map { $0! })
    }
}

/// A merge patch's change set, and where in the patch each fragment came from.
public struct MergePatchTranslation: Sendable {
    /// The fragments, in document order.
    public let fragments: [SyncFragment]
    let origins: [Origin]

    /// The patch location of one fragment: the object and each of its members.
    struct Origin: Sendable {
        var objectPath: String
        /// Property name → pointer of its member, and whether that member was an array (so an
        /// element error `shapes[2]` points at `/shapes/2`).
        var members: [String: (path: String, isArray: Bool)] = [:]
    }

    /// The change set to submit.
    public var changeSet: ChangeSet { ChangeSet(fragments: fragments) }

    /// Whether the patch names no member to change (`{}`, or only empty objects for the objects
    /// it references): RFC 7396 leaves the target as it is, so there is nothing to submit.
    public var changesNothing: Bool {
        fragments.allSatisfy { $0.type == .change && $0.properties.count == 0 }
    }

    /// The errors of a rejected change set, each at the patch location it came from: the
    /// member for a property error, the element for an element error, the object otherwise.
    public func errors(for replies: [FragmentReply]) -> [MergePatchError] {
        var errors: [MergePatchError] = []
        for (index, reply) in replies.enumerated() {
            guard let error = reply.error, index < origins.count else { continue }
            errors.append(
                MergePatchError(path: path(of: error, in: origins[index]), kind: error.kind, message: error.message))
        }
        return errors
    }

    private func path(of error: FragmentError, in origin: Origin) -> String {
        guard let property = error.property else { return origin.objectPath }
        if let member = origin.members[property] { return member.path }
        // An element: `name[index]`.
        if let bracket = property.firstIndex(of: "["), property.hasSuffix("]"),
            let member = origin.members[String(property[..<bracket])]
        {
            let index = property[property.index(after: bracket)..<property.index(before: property.endIndex)]
            return member.isArray ? member.path + "/" + index : member.path
        }
        return origin.objectPath
    }
}

/// One reason a merge patch was refused: where in the patch, the error kind (docs/model.md) and
/// a sentence a person can act on.
///
/// ```swift
/// MergePatchError(path: "/shapes/1/x", kind: .typeMismatch, message: "expected a number, got a string")
/// ```
public struct MergePatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A JSON Pointer (RFC 6901) into the patch; `""` is the whole patch.
    public let path: String
    public let kind: FragmentError.Kind
    public let message: String

    public init(path: String, kind: FragmentError.Kind, message: String) {
        self.path = path
        self.kind = kind
        self.message = message
    }

    /// `{"path":…,"type":…,"message":…}`.
    public var jsonValue: JSONValue {
        ["path": .string(path), "type": .string(kind.rawValue), "message": .string(message)]
    }

    public var description: String { "\(path.isEmpty ? "/" : path): \(kind.rawValue): \(message)" }

    /// `name` escaped as one JSON Pointer reference token. By Unicode scalar, as RFC 6901 reads
    /// it: a `/` or `~` followed by a combining mark is one Character to String's own methods,
    /// which would leave it unescaped.
    static func token(_ name: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            switch scalar {
            case "~": escaped.append(contentsOf: "~0".unicodeScalars)
            case "/": escaped.append(contentsOf: "~1".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}

/// Walks a patch depth-first, emitting one fragment per object it touches.
private struct Translator {
    let state: ScopeState
    let schema: Schema
    let newUUID: () -> UUID
    var fragments: [SyncFragment?] = []
    var origins: [MergePatchTranslation.Origin?] = []
    var errors: [MergePatchError] = []
    /// Objects this patch adds, with their class: a second mention merges into them.
    var added: [UUID: ModelClass] = [:]

    init(state: ScopeState, schema: Schema, newUUID: @escaping () -> UUID) {
        self.state = state
        self.schema = schema
        self.newUUID = newUUID
    }

    mutating func patch(
        _ members: JSONObject, of uuid: UUID, modelClass: ModelClass, isNew: Bool, at path: String, isTarget: Bool
    ) {
        let slot = fragments.count
        fragments.append(nil)
        origins.append(nil)
        var origin = MergePatchTranslation.Origin(objectPath: path)
        var properties = JSONObject()
        for member in members {
            let memberPath = path + "/" + MergePatchError.token(member.key)
            if member.key == "uuid" || member.key == "clsName" {
                if isTarget { checkTargetIdentity(member, uuid: uuid, modelClass: modelClass, at: memberPath) }
                continue
            }
            let declared = modelClass.property(named: member.key)
            let value = resolve(member.value, for: declared?.type, at: memberPath)
            origin.members[member.key] = (memberPath, member.value.array != nil)
            properties.appendUnchecked(key: member.key, value: value)
        }
        fragments[slot] = SyncFragment(
            type: isNew ? .add : .change, uuid: uuid, clsName: modelClass.name, properties: properties)
        origins[slot] = origin
    }

    /// The member's value as fragment JSON: nested objects of reference properties replaced by
    /// their UUIDs (and patched or added on the way); anything else as given, for the change set
    /// to validate.
    mutating func resolve(_ value: JSONValue, for type: PropertyType?, at path: String) -> JSONValue {
        switch (type, value) {
        case (.reference(let className), .object(let nested)):
            return reference(nested, declaredClass: className, at: path)
        case (.collection(.reference(let className)), .array(let elements)):
            return .array(
                elements.enumerated().map { index, element in
                    guard case .object(let nested) = element else { return element }
                    return reference(nested, declaredClass: className, at: path + "/\(index)")
                })
        case (.collection(.reference(let className)), .object(let operations)):
            var resolved = JSONObject()
            for member in operations {
                let operationPath = path + "/" + MergePatchError.token(member.key)
                switch (member.key, member.value) {
                case ("insert", .array(let elements)):
                    resolved.appendUnchecked(
                        key: "insert",
                        value: .array(
                            elements.enumerated().map { index, element in
                                guard case .object(let nested) = element else { return element }
                                return reference(nested, declaredClass: className, at: operationPath + "/\(index)")
                            }))
                case ("remove", .array(let elements)):
                    resolved.appendUnchecked(key: "remove", value: .array(elements.map(identity)))
                case ("before", let anchor):
                    resolved.appendUnchecked(key: "before", value: identity(anchor))
                default:
                    resolved.appendUnchecked(key: member.key, value: member.value)
                }
            }
            return .object(resolved)
        default:
            return value
        }
    }

    /// An object named only to identify one (a `remove` value, a `before` anchor): its UUID.
    private func identity(_ value: JSONValue) -> JSONValue {
        if case .object(let nested) = value, let uuid = nested["uuid"], case .string = uuid { return uuid }
        return value
    }

    /// A nested object: merged into the scope's object with its UUID, or added; its UUID string
    /// takes its place in the parent's fragment.
    private mutating func reference(_ nested: JSONObject, declaredClass: String, at path: String) -> JSONValue {
        let uuid: UUID
        switch nested["uuid"] {
        case nil:
            uuid = newUUID()
        case .string(let text)?:
            guard let parsed = UUID(wireString: text) else {
                errors.append(
                    MergePatchError(path: path + "/uuid", kind: .typeMismatch, message: "'\(text)' is not a UUID"))
                return .null
            }
            uuid = parsed
        case let other?:
            errors.append(
                MergePatchError(
                    path: path + "/uuid", kind: .typeMismatch,
                    message: "a nested object's uuid must be a UUID string, not \(other.typeDescription)"))
            return .null
        }
        if let existing = state.object(uuid) {
            patch(nested, of: uuid, modelClass: existing.modelClass, isNew: false, at: path, isTarget: false)
            if let named = nested["clsName"], named != .string(existing.clsName) {
                errors.append(
                    MergePatchError(
                        path: path + "/clsName", kind: .classMismatch,
                        message: "\(uuid.wireString) is a \(existing.clsName), not \(named.encodedString())"))
            }
            return .string(uuid.wireString)
        }
        if let earlier = added[uuid] {
            patch(nested, of: uuid, modelClass: earlier, isNew: false, at: path, isTarget: false)
            if let named = nested["clsName"], named != .string(earlier.name) {
                errors.append(
                    MergePatchError(
                        path: path + "/clsName", kind: .classMismatch,
                        message: "\(uuid.wireString) is added above as a \(earlier.name), not \(named.encodedString())")
                )
            }
            return .string(uuid.wireString)
        }
        let className: String
        switch nested["clsName"] {
        case nil: className = declaredClass
        case .string(let named)?: className = named
        case let other?:
            errors.append(
                MergePatchError(
                    path: path + "/clsName", kind: .typeMismatch,
                    message: "clsName must be a class name string, not \(other.typeDescription)"))
            return .null
        }
        guard let modelClass = schema.modelClass(named: className) else {
            errors.append(
                MergePatchError(
                    path: path + "/clsName", kind: .unknownClass, message: "the schema has no class \(className)"))
            return .null
        }
        added[uuid] = modelClass
        patch(nested, of: uuid, modelClass: modelClass, isNew: true, at: path, isTarget: false)
        return .string(uuid.wireString)
    }

    /// A `uuid` or `clsName` member at the top of the patch must name the target itself.
    private mutating func checkTargetIdentity(
        _ member: JSONObject.Member, uuid: UUID, modelClass: ModelClass, at path: String
    ) {
        if member.key == "uuid" {
            guard case .string(let text) = member.value, UUID(wireString: text) == uuid else {
                errors.append(
                    MergePatchError(
                        path: path, kind: .unknownObject,
                        message:
                            "the patch names \(member.value.encodedString()), but it is applied to \(uuid.wireString)"))
                return
            }
        } else if member.value != .string(modelClass.name) {
            errors.append(
                MergePatchError(
                    path: path, kind: .classMismatch,
                    message: "\(uuid.wireString) is a \(modelClass.name), not \(member.value.encodedString())"))
        }
    }
}
