import SocketLoop

/// One client socket on a ``ClientLoop``: the SocketLoop handler that parses responses and hands
/// them to its delegate. Confined to its loop's thread.
public final class ClientConnection: ConnectionHandler {
    /// The caller's number for this connection (subscriber or writer index).
    public let tag: Int
    unowned let loop: ClientLoop
    let delegate: any ClientConnectionDelegate
    var parser = HTTPResponseParser()
    var connection: Connection?
    /// Why the connection ended, when the server or the network ended it.
    private var closeReason: String?
    public private(set) var isConnected = false
    public private(set) var isClosed = false

    init(tag: Int, loop: ClientLoop, delegate: any ClientConnectionDelegate) {
        self.tag = tag
        self.loop = loop
        self.delegate = delegate
    }

    /// The socket descriptor, or -1 when the socket could not be opened.
    public var fileDescriptor: Int32 { connection?.fileDescriptor ?? -1 }

    /// Queues `bytes`; the loop writes them at the end of this iteration (or once connected).
    public func send(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        connection?.write(bytes)
    }

    /// Closes the socket; the delegate hears `connectionDidClose(error: nil)`.
    public func close() {
        connection?.close()
    }

    func didFailToOpen(_ reason: String) {
        isClosed = true
        delegate.connectionDidClose(self, error: reason)
    }

    // MARK: ConnectionHandler

    public func connectionDidOpen(_ connection: Connection) {
        self.connection = connection
        isConnected = true
        loop.connectAttemptEnded()
        delegate.connectionDidConnect(self)
    }

    public func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
        do {
            try parser.consume(bytes) { event in
                guard !isClosed else { return }
                delegate.connection(self, didReceive: event)
            }
        } catch {
            closeReason = "bad response: \(error)"
            connection.close()
        }
    }

    public func connectionDidReadEOF(_ connection: Connection) {
        parser.finish { event in delegate.connection(self, didReceive: event) }
        closeReason = parser.isIdle ? "closed by the server" : "closed by the server mid-response"
        connection.close()
    }

    public func connectionExceededPendingLimit(_ connection: Connection) {
        closeReason = "the server does not read what is sent"
        connection.close()
    }

    public func connectionDidClose(_ connection: Connection) {
        guard !isClosed else { return }
        isClosed = true
        if !isConnected { loop.connectAttemptEnded() }
        let reason = connection.failure.map { "\($0)" } ?? closeReason
        delegate.connectionDidClose(self, error: reason)
    }
}

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
