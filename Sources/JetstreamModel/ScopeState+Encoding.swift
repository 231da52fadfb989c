import Foundation
import JetstreamJSON

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
