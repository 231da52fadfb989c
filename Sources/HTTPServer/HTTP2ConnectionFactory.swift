import SocketLoop

/// The seam for HTTP/2 (cleartext, same port). The HTTP/1 handler calls it when a connection
/// starts with the client preface (`PRI * HTTP/2.0…`, prior knowledge) or a request asks for
/// `Upgrade: h2c`; the returned handler takes over the socket with
/// ``SocketLoop/Connection/replaceHandler(with:replaying:)``. The HTTP/2 handler feeds requests
/// to ``ServerCore/handle(_:channel:requestID:connection:)`` and implements ``HTTPResponseChannel``
/// per stream, so handlers, responders and event streams work unchanged.
protocol HTTP2ConnectionFactory: Sendable {
    /// The connection began with the HTTP/2 preface; `bytes` (not yet consumed, starting with the
    /// preface) are replayed into the returned handler.
    func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler

    /// `request` asked `Upgrade: h2c` with `HTTP2-Settings: settings`. Return nil to decline (the
    /// request is then served over HTTP/1.1), or a handler that writes `101 Switching Protocols`
    /// and answers `request` as stream 1.
    func makeUpgradeHandler(
        connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
    ) -> (any ConnectionHandler)?
}
