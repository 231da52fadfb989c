import HTTPServer
import Logging
import SocketLoop
import Testing

/// Runs `body` against an in-process server on an ephemeral loopback port, then shuts it down.
func withTestServer(
    loops: Int = 2, configure: (inout HTTPServerConfiguration) -> Void = { _ in }, router: Router,
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: loops)
    configuration.gracePeriod = .seconds(5)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, router: router, logger: Logger(label: "test"))
    try server.start()
    let port = try #require(server.boundPorts.first)
    do {
        try await body(server, port)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}
