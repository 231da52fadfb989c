import Foundation
import JetstreamJSON

extension ScopeState {
    /// Why an object cannot be expanded as asked.
    public enum ExpansionError: Error, Sendable, Hashable {
        /// The expansion would exceed `maxBytes` (shared objects repeat once per path).
        case tooLarge(maxBytes: Int)
    }

    /// One object as `GET /v1/scopes/{name}/objects/{uuid}?depth=N` answers it:
    /// `{"uuid","clsName","properties":{…},"parents":[…]}` where, down to `depth` levels, every
    /// reference and collection element is the referenced object itself, in the shape a merge
    /// patch takes — `{"uuid","clsName", <its properties>…}` — so read-modify-write is natural.
    ///
    /// An object that is already being expanded on the current path (a cycle) stays a UUID
    /// string; a shared object is expanded once per path that reaches it. The work is bounded by
    /// `depth` and by `maxBytes` of output, beyond which ``ExpansionError/tooLarge(maxBytes:)``.
    ///
    /// ```swift
    /// try state.objectJSON(canvas, depth: 1)?["properties"]?["shapes"]   // [{"uuid":…,"clsName":"Shape","x":…}, …]
    /// ```
    public func objectJSON(_ uuid: UUID, depth: Int, maxBytes: Int = 8 << 20) throws(ExpansionError) -> JSONValue? {
        guard depth > 0 else { return objectJSON(uuid) }
        guard var top = objectJSON(uuid)?.object, let object = object(uuid) else { return nil }
        var expander = Expander(state: self, maxBytes: maxBytes, budget: maxBytes - top.encodedString().utf8.count)
        guard expander.budget >= 0 else { throw .tooLarge(maxBytes: maxBytes) }
        expander.path.insert(uuid)
        let properties = try expander.properties(of: object, depth: depth)
        top = JSONObject(top.map { $0.key == "properties" ? .init(key: "properties", value: .object(properties)) : $0 })
        return .object(top)
    }
}

/// Expands references depth-first, spending a byte budget as it goes.
private struct Expander {
    let state: ScopeState
    let maxBytes: Int
    var budget: Int
    /// The objects on the current path from the top object (cycles stop here).
    var path: Set<UUID> = []

    init(state: ScopeState, maxBytes: Int, budget: Int) {
        self.state = state
        self.maxBytes = maxBytes
        self.budget = budget
    }

    /// The object's properties with references expanded `depth` levels down.
    mutating func properties(of object: ScopeObject, depth: Int) throws(ScopeState.ExpansionError) -> JSONObject {
        var result = JSONObject()
        result.reserveCapacity(object.values.count)
        for (property, value) in zip(object.modelClass.properties, object.values) {
            let expanded: JSONValue
            switch value {
            case .reference(let target):
                expanded = try expand(target, depth: depth)
            case .references(let targets):
                var elements: [JSONValue] = []
                elements.reserveCapacity(targets.count)
                for target in targets { elements.append(try expand(target, depth: depth)) }
                expanded = .array(elements)
            default:
                expanded = value.jsonValue
            }
            result.appendUnchecked(key: property.name, value: expanded)
        }
        return result
    }

    /// `{"uuid","clsName",…properties}` for one level down, or the UUID string where the path
    /// already holds the object.
    private mutating func expand(_ uuid: UUID, depth: Int) throws(ScopeState.ExpansionError) -> JSONValue {
        guard let object = state.object(uuid), !path.contains(uuid) else { return .string(uuid.wireString) }
        // The object's own bytes, charged before its children so a blow-up stops early.
        budget -= JSONValue.object(object.propertiesJSON).encoded().count + 64
        guard budget >= 0 else { throw .tooLarge(maxBytes: maxBytes) }
        var members = JSONObject()
        members.appendUnchecked(key: "uuid", value: .string(uuid.wireString))
        members.appendUnchecked(key: "clsName", value: .string(object.clsName))
        let properties: JSONObject
        if depth > 1 {
            path.insert(uuid)
            properties = try self.properties(of: object, depth: depth - 1)
            path.remove(uuid)
        } else {
            properties = object.propertiesJSON
        }
        for member in properties { members.appendUnchecked(key: member.key, value: member.value) }
        return .object(members)
    }
}
