import HTTPTypes
import Logging
import SocketLoop
import Testing

@testable import HTTPServer

/// The seam the HTTP/2 integration plugs into: preface detection and `Upgrade: h2c` hand the
/// socket to another handler with the unconsumed bytes. A stand-in factory records what it got
/// (the real one lives on the h2 branch).
@Suite struct HTTP2SeamTests {
    final class Recorder: ConnectionHandler {
        let label: String
        init(label: String) { self.label = label }
        func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
            connection.write(Array("\(label) got \(bytes.count) bytes: ".utf8) + Array(bytes.prefix(3)) + [10])
        }
    }

    struct StandInFactory: HTTP2ConnectionFactory {
        func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler {
            Recorder(label: "preface")
        }
        func makeUpgradeHandler(
            connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
        ) -> (any ConnectionHandler)? {
            // An empty SETTINGS payload (valid) is this stand-in's signal to decline.
            settings.isEmpty ? nil : Recorder(label: "upgrade \(request.path)")
        }
    }

    func withSeamServer(_ body: (Int) async throws -> Void) async throws {
        var router = Router()
        router.get("/plain") { _, _ in .text("http1") }
        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: 1)
        configuration.gracePeriod = .seconds(2)
        let core = ServerCore(
            configuration: configuration, router: router, logger: Logger(label: "test"), http2: StandInFactory())
        let server = HTTPServer(core: core)
        try server.start()
        let port = try #require(server.boundPorts.first)
        try await body(port)
        await server.shutdown()
    }

    @Test func prefaceArrivingInPiecesHandsOverEveryByte() async throws {
        try await withSeamServer { port in
            let client = try HTTPTestClient(port: port)
            client.send("PRI * HTTP/2.0\r\n")
            client.send("\r\nSM\r\n\r\nABC")
            // The preface (24 bytes) plus what followed it reach the new handler in one replay.
            #expect(await client.read(untilContains: "\n") == "preface got 27 bytes: PRI\n")
        }
    }

    @Test func upgradeH2cHandsOverAndDeclinedUpgradeStaysHTTP1() async throws {
        try await withSeamServer { port in
            let declined = try HTTPTestClient(port: port)
            declined.send(
                "GET /plain HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                    + "HTTP2-Settings: \r\n\r\n")
            #expect(await declined.readResponse()?.text == "http1")

            // A payload no upgrade can use is refused in HTTP/1.1 before the factory is asked.
            let unusable = try HTTPTestClient(port: port)
            unusable.send(
                "GET /plain HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                    + "HTTP2-Settings: not*base64\r\n\r\n")
            #expect(await unusable.readResponse()?.status == 400)

            let upgraded = try HTTPTestClient(port: port)
            upgraded.send(
                "GET /plain HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                    + "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\nPRI")
            #expect(await upgraded.read(untilContains: "\n") == "upgrade /plain got 3 bytes: PRI\n")

            let plain = try HTTPTestClient(port: port)
            plain.send("GET /plain HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(await plain.readResponse()?.text == "http1")
        }
    }
}
