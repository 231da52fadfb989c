import JetstreamJSON

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
