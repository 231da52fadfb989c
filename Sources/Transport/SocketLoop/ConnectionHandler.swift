/// The protocol side of one socket: a ``Connection`` calls these on its loop thread, never
/// concurrently. A handler can hand the connection to another handler (for example HTTP/1 to
/// HTTP/2 after an upgrade) with ``Connection/replaceHandler(with:replaying:)``.
///
/// ```swift
/// final class Echo: ConnectionHandler {
///     func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
///         connection.write(Array(bytes))
///     }
/// }
/// ```
public protocol ConnectionHandler: AnyObject {
    /// The connection was accepted and registered; the handler may set a deadline.
    func connectionDidOpen(_ connection: Connection)
    /// Bytes arrived. They are valid only during the call: copy what must be kept.
    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer)
    /// The peer closed its sending side. The default closes the connection.
    func connectionDidReadEOF(_ connection: Connection)
    /// Everything queued was written after the kernel had refused some of it (back-pressure ended).
    func connectionDidDrain(_ connection: Connection)
    /// ``Connection/deadline`` passed (checked on the loop's coarse tick).
    func connection(_ connection: Connection, deadlinePassed now: LoopInstant)
    /// Unsent bytes exceeded the loop's cap. The policy hook: the default closes the connection;
    /// a handler streaming a bounded response may ignore it.
    func connectionExceededPendingLimit(_ connection: Connection)
    /// The server is shutting down: finish what is in flight, then close.
    func connectionShouldQuiesce(_ connection: Connection)
    /// The connection is closed; no more calls follow.
    func connectionDidClose(_ connection: Connection)
}

extension ConnectionHandler {
    public func connectionDidOpen(_ connection: Connection) {}
    public func connectionDidReadEOF(_ connection: Connection) { connection.close() }
    public func connectionDidDrain(_ connection: Connection) {}
    public func connection(_ connection: Connection, deadlinePassed now: LoopInstant) { connection.close() }
    public func connectionExceededPendingLimit(_ connection: Connection) { connection.close() }
    public func connectionShouldQuiesce(_ connection: Connection) { connection.close() }
    public func connectionDidClose(_ connection: Connection) {}
}
