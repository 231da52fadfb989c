/// One accepted change set as the log keeps it: its version and the gateway's encoded payload.
///
/// ```swift
/// for record in page.records { send(event: "changeset", id: record.version, data: record.payload) }
/// ```
public struct ChangeRecord: Sendable, Hashable {
    public var version: Int64
    /// Opaque bytes (the gateway stores the normalised fragments and removed UUIDs as JSON).
    public var payload: [UInt8]

    public init(version: Int64, payload: [UInt8]) {
        self.version = version
        self.payload = payload
    }
}
