extension AppliedChangeSet {
    /// Writes the SSE `changeset` payload `{"version":N,"fragments":[…],"removed":[…]}` straight
    /// into a writer, so the gateway encodes an accepted set once and reuses the bytes.
    ///
    /// ```swift
    /// var writer = JSONWriter()
    /// applied.writeEvent(to: &writer)
    /// let data = writer.bytes
    /// ```
    public func writeEvent(to writer: inout JSONWriter) {
        writer.writeRaw(#"{"version":"#)
        writer.writeRaw(String(state.version))
        writer.writeRaw(#","fragments":["#)
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            fragment.write(to: &writer)
        }
        writer.writeRaw(#"],"removed":["#)
        for (index, uuid) in removed.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(uuid: uuid)
        }
        writer.writeRaw("]}")
    }
}

extension ScopeState {
    /// Writes `{"name","version","rootUUID","fragments":[…]}` (the same bytes as
    /// `stateJSON(name:).encoded()`) without building the intermediate tree.
    public func writeState(name: String, to writer: inout JSONWriter) {
        writer.writeRaw(#"{"name":"#)
        writer.write(string: name)
        writer.writeRaw(#","version":"#)
        writer.writeRaw(String(version))
        writer.writeRaw(#","rootUUID":""#)
        writer.writeRaw(rootUUID.wireString)
        writer.writeRaw(#"","fragments":["#)
        var first = true
        walkPreOrder { object in
            if !first { writer.writeRaw(",") }
            first = false
            object.writeFragment(isRoot: object.uuid == rootUUID, to: &writer)
        }
        writer.writeRaw("]}")
    }
}

extension ModelClass {
    /// This class's schema entry: `extends` when it has a superclass, then the properties it
    /// declares, in the long form and declaration order.
    public var jsonValue: JSONValue {
        var properties = JSONObject()
        if let superclassName { properties.appendUnchecked(key: "extends", value: .string(superclassName)) }
        for property in ownProperties {
            properties.appendUnchecked(key: property.name, value: property.jsonValue)
        }
        return .object(properties)
    }
}
