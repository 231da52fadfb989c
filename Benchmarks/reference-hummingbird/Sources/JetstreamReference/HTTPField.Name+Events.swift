import HTTPTypes

extension HTTPField.Name {
    /// The SSE resume point a reconnecting `EventSource` sends.
    static let lastEventID = Self("Last-Event-ID")!
    /// Tells nginx not to buffer the stream.
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
