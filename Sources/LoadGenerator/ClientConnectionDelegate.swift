/// What drives a ``ClientConnection``: a request loop, an event-stream subscriber. Every call
/// happens on the connection's loop thread.
public protocol ClientConnectionDelegate: AnyObject {
    /// The TCP connection is established; typically sends the first request.
    func connectionDidConnect(_ connection: ClientConnection)
    /// A response event, in order (head, body slices, end; repeated for pipelined responses).
    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event)
    /// The connection is closed; `error` says why when it was not closed by ``ClientConnection/close()``.
    func connectionDidClose(_ connection: ClientConnection, error: String?)
}
