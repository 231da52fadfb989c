/// One Server-Sent Event as a client's ``SSEParser`` dispatches it (the server writes
/// `HTTPServer.SSEEvent`s).
public struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field, or `"message"` when the event had none.
    public var type: String
    /// The stream's last event ID after this event (the `id:` field persists across events).
    public var lastEventID: String
    /// The `data:` lines joined with `\n`.
    public var data: [UInt8]

    public init(type: String, lastEventID: String, data: [UInt8]) {
        self.type = type
        self.lastEventID = lastEventID
        self.data = data
    }

    /// ``data`` as UTF-8 text.
    public var text: String { String(decoding: data, as: UTF8.self) }
}
