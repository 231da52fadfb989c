import JetstreamJSON

extension Value {
    /// Writes the value's fragment JSON straight into a writer: the same bytes as
    /// `jsonValue.encoded()`, without building the tree.
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.writeRaw("null")
        case .bool(let flag): writer.writeRaw(flag ? "true" : "false")
        case .int(let integer): writer.writeRaw(String(integer))
        case .uint(let integer): writer.writeRaw(String(integer))
        case .float(let float): writer.writeRaw(JSONNumber(float).text)
        case .double(let double): writer.writeRaw(JSONNumber(double).text)
        case .string(let string): writer.write(string: string)
        case .reference(let uuid): writer.write(uuid: uuid)
        case .references(let uuids):
            writer.writeRaw("[")
            for (index, uuid) in uuids.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.write(uuid: uuid)
            }
            writer.writeRaw("]")
        case .list(let values):
            writer.writeRaw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                value.write(to: &writer)
            }
            writer.writeRaw("]")
        }
    }
}
