import Foundation
import GatewayServer
import JetstreamModel
import Logging
import ScopeEngine
import SocketLoop
import TestSupport
import Testing

@testable import Gateway

/// A real gateway, assembled by ``GatewayServer`` in-process on an ephemeral loopback port and
/// driven over real sockets: the same builder `jetstream serve` uses.
@Suite("GatewayServer in-process over loopback")
struct GatewayServerLiveTests {
    static func withServer(
        configure: (inout GatewayServerConfiguration) -> Void = { _ in },
        _ body: (GatewayServer) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gws-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = GatewayServerConfiguration(dataDirectory: directory.path)
        configuration.port = 0
        configuration.loops = 1
        configuration.accessLog = false
        configuration.heartbeatInterval = .seconds(1)
        configure(&configuration)
        let server = try await GatewayServer.start(configuration, logger: Logger(label: "test"))
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// One HTTP/1.1 request on a fresh connection (`Connection: close`); the whole answer as text.
    static func request(
        _ server: GatewayServer, _ method: String, _ target: String, body: String? = nil,
        headers: [String] = []
    ) async throws -> String {
        let socket = try TestSocket(port: server.port)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for header in headers { head += header + "\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        socket.send(head + "\r\n" + (body ?? ""))
        let answer = await socket.read(timeout: 10)
        return String(decoding: answer, as: UTF8.self)
    }

    @Test("the builder serves the demo scope, accepts a change set and streams it to a subscriber")
    func demoRoundTrip() async throws {
        try await Self.withServer { server in
            #expect(server.engine.handle(named: "demo") != nil)
            let state = try await Self.request(server, "GET", "/v1/scopes/demo")
            #expect(state.hasPrefix("HTTP/1.1 200"))
            #expect(state.contains(#"ETag: "0""#))

            let stream = try TestSocket(port: server.port)
            stream.send("GET /v1/scopes/demo/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 0\r\n\r\n")
            _ = await stream.read(untilContains: "retry: 2000", timeout: 10)

            let root = server.engine.handle(named: "demo")!.committedState.rootUUID.wireString
            let change =
                #"{"fragments":[{"type":"change","uuid":"\#(root)","clsName":"Canvas","properties":{"name":"x"}}]}"#
            let posted = try await Self.request(server, "POST", "/v1/scopes/demo/changesets", body: change)
            #expect(posted.hasPrefix("HTTP/1.1 200"))
            #expect(posted.contains(#""version":1"#))
            let event = await stream.read(untilContains: "id: 1", timeout: 10)
            #expect(event.contains("event: changeset\nid: 1\ndata: {\"version\":1,"))
        }
    }

    @Test("limits come from one value: the fragment count is refused once, with 413 too-many-fragments")
    func fragmentLimitIsOneAnswer() async throws {
        let twoFragments: (inout GatewayServerConfiguration) -> Void = { $0.limits.maxFragmentsPerSet = 2 }
        try await Self.withServer(configure: twoFragments) { server in
            let root = server.engine.handle(named: "demo")!.committedState.rootUUID.wireString
            let fragment = #"{"type":"change","uuid":"\#(root)","clsName":"Canvas","properties":{"name":"x"}}"#
            let three = #"{"fragments":[\#(fragment),\#(fragment),\#(fragment)]}"#
            let refused = try await Self.request(server, "POST", "/v1/scopes/demo/changesets", body: three)
            #expect(refused.hasPrefix("HTTP/1.1 413"))
            #expect(refused.contains("/problems/too-many-fragments"))
            #expect(refused.contains("at most 2"))
            #expect(server.engine.configuration.limits.maxFragmentsPerSet == 2)
            let two = #"{"fragments":[\#(fragment),\#(fragment)]}"#
            #expect(
                try await Self.request(server, "POST", "/v1/scopes/demo/changesets", body: two).hasPrefix(
                    "HTTP/1.1 200"))
        }
    }

    @Test("request metrics are labelled by the matched route pattern, never by a scope name or raw target")
    func routeLabels() async throws {
        let withAccessLog: (inout GatewayServerConfiguration) -> Void = { $0.accessLog = true }
        try await Self.withServer(configure: withAccessLog) { server in
            _ = try await Self.request(server, "GET", "/v1/scopes/demo?x=1")
            _ = try await Self.request(server, "GET", "/v1/scopes/nope-9")
            _ = try await Self.request(server, "GET", "/v1/scopes/demo/changesets?since=0")
            _ = try await Self.request(server, "GET", "/no/such/path")
            let metrics = try await Self.request(server, "GET", "/metrics")
            #expect(metrics.contains(#"jetstream_http_requests_total{route="/v1/scopes/{name}",status="200"} 1"#))
            #expect(metrics.contains(#"jetstream_http_requests_total{route="/v1/scopes/{name}",status="404"} 1"#))
            #expect(metrics.contains(#"route="/v1/scopes/{name}/changesets",status="200"} 1"#))
            #expect(metrics.contains(#"jetstream_http_requests_total{route="other",status="404"} 1"#))
            #expect(!metrics.contains("nope-9"))
            #expect(!metrics.contains("/no/such/path"))
        }
    }

    @Test("a large state is gzipped once per version and served the same to every client that accepts it")
    func gzipOncePerVersion() async throws {
        try await Self.withServer { server in
            let root = server.engine.handle(named: "demo")!.committedState.rootUUID.wireString
            let name = String(repeating: "n", count: 4000)
            let change =
                #"{"fragments":[{"type":"change","uuid":"\#(root)","clsName":"Canvas","properties":{"name":"\#(name)"}}]}"#
            #expect(
                try await Self.request(server, "POST", "/v1/scopes/demo/changesets", body: change).hasPrefix(
                    "HTTP/1.1 200"))
            let first = try await Self.request(server, "GET", "/v1/scopes/demo", headers: ["Accept-Encoding: gzip"])
            let second = try await Self.request(server, "GET", "/v1/scopes/demo", headers: ["Accept-Encoding: gzip"])
            #expect(first.contains("Content-Encoding: gzip"))
            #expect(first.contains("Vary: Accept-Encoding"))
            let state = server.engine.handle(named: "demo")!.encodedState()
            // The kept bodies (not this closure's result): the JSON once, and its gzip made once.
            let bodies = state.derived { _ in StateBodies(json: []) }
            #expect(bodies.identity.count == state.json.count)
            let gzip = try #require(bodies.gzip(of: []))  // made already: the argument is not used
            #expect(gzip.count < state.json.count)
            #expect(first.split(separator: "\r\n\r\n").last == second.split(separator: "\r\n\r\n").last)
            let plain = try await Self.request(server, "GET", "/v1/scopes/demo")
            #expect(!plain.contains("Content-Encoding"))
        }
    }
}
