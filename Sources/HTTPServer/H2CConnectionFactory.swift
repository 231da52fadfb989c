import SocketLoop

/// Cleartext HTTP/2 on the HTTP/1 port: prior knowledge (the client starts with the preface) and
/// `Upgrade: h2c`. Set as ``ServerCore/http2``; the HTTP/1 handler calls it.
///
/// ```swift
/// let core = ServerCore(configuration: configuration, router: router, logger: logger, http2: H2CConnectionFactory())
/// ```
struct H2CConnectionFactory: HTTP2ConnectionFactory {
    func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler {
        HTTP2ConnectionHandler(connection: connection, core: core)
    }

    func makeUpgradeHandler(
        connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
    ) -> (any ConnectionHandler)? {
        // A request body already read over HTTP/1.1 travels with the request as stream 1's body.
        HTTP2ConnectionHandler(connection: connection, core: core, upgrade: (request, settings))
    }
}
