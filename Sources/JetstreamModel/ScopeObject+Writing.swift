import JetstreamJSON

extension ScopeObject {
    /// Writes this object as a full-state fragment (`change` for the root, `add` otherwise).
    func writeFragment(isRoot: Bool, to writer: inout JSONWriter) {
        writer.writeRaw(isRoot ? #"{"type":"change","uuid":"# : #"{"type":"add","uuid":"#)
        writer.write(uuid: uuid)
        writer.writeRaw(#","clsName":"#)
        writer.write(string: clsName)
        writer.writeRaw(#","properties":{"#)
        for (index, property) in modelClass.properties.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.write(string: property.name)
            writer.writeRaw(":")
            values[index].write(to: &writer)
        }
        writer.writeRaw("}}")
    }
}
