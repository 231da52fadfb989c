import Foundation
import GatewayServer
import JetstreamModel
import Testing

@testable import Gateway

/// `/client/…` and `/demo/…` (docs/gateway.md, "The browser client and the demo"): the files of
/// `Clients/js` as they are on disk, with validators, over a real in-process server.
@Suite("The browser client and the demo, served by the gateway")
struct ClientRoutesTests {
    struct Asset: Sendable, CustomTestStringConvertible {
        let path: String
        let file: String
        let contentType: String
        var testDescription: String { path }
    }

    static let assets = [
        Asset(path: "/client/jetstream.mjs", file: "jetstream.mjs", contentType: "text/javascript; charset=utf-8"),
        Asset(
            path: "/client/jetstream.d.ts", file: "jetstream.d.ts", contentType: "application/typescript; charset=utf-8"
        ),
        Asset(path: "/demo/", file: "demo/index.html", contentType: "text/html; charset=utf-8"),
        Asset(path: "/demo/demo.css", file: "demo/demo.css", contentType: "text/css; charset=utf-8"),
        Asset(path: "/demo/demo.mjs", file: "demo/demo.mjs", contentType: "text/javascript; charset=utf-8"),
    ]

    /// `Clients/js` of this checkout.
    static let clientsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Clients/js")

    /// A response split into its status code, header fields (names lowercased) and body.
    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String

        init(_ text: String) {
            let parts = text.components(separatedBy: "\r\n\r\n")
            let lines = parts[0].components(separatedBy: "\r\n")
            status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            self.headers = headers
            body = parts.dropFirst().joined(separator: "\r\n\r\n")
        }
    }

    static func get(
        _ server: GatewayServer, _ target: String, method: String = "GET", headers: [String] = []
    )
        async throws -> Answer
    {
        Answer(try await GatewayServerLiveTests.request(server, method, target, headers: headers))
    }

    static func withServer(schema: Schema? = nil, _ body: (GatewayServer) async throws -> Void) async throws {
        try await GatewayServerLiveTests.withServer(configure: { $0.schema = schema }, body)
    }

    @Test("each file is served byte for byte with its type, no-cache, nosniff and a strong ETag", arguments: assets)
    func served(_ asset: Asset) async throws {
        let onDisk = try String(contentsOf: Self.clientsDirectory.appendingPathComponent(asset.file), encoding: .utf8)
        try await Self.withServer { server in
            let answer = try await Self.get(server, asset.path)
            #expect(answer.status == 200)
            #expect(answer.body == onDisk, "the binary embeds Clients/js/\(asset.file)")
            #expect(answer.headers["content-type"] == asset.contentType)
            #expect(answer.headers["cache-control"] == "no-cache")
            #expect(answer.headers["x-content-type-options"] == "nosniff")
            let tag = try #require(answer.headers["etag"])
            #expect(tag == "\"\(StaticAsset.fnv1a64Hex(Array(onDisk.utf8)))\"")
        }
    }

    @Test("If-None-Match with the ETag (strong, weak, in a list, *) is 304 without a body; another tag is 200")
    func conditional() async throws {
        try await Self.withServer { server in
            for asset in Self.assets {
                let tag = try #require(try await Self.get(server, asset.path).headers["etag"])
                for condition in [tag, "W/\(tag)", "\"0000000000000000\", \(tag)", "*"] {
                    let answer = try await Self.get(server, asset.path, headers: ["If-None-Match: \(condition)"])
                    #expect(answer.status == 304, "\(asset.path) with If-None-Match: \(condition)")
                    #expect(answer.headers["etag"] == tag)
                    #expect(answer.headers["cache-control"] == "no-cache")
                    #expect(answer.body.isEmpty)
                }
                let other = try await Self.get(server, asset.path, headers: [#"If-None-Match: "0000000000000000""#])
                #expect(other.status == 200)
            }
        }
    }

    @Test("HEAD answers the GET's head without the body")
    func head() async throws {
        let onDisk = try Data(contentsOf: Self.clientsDirectory.appendingPathComponent("jetstream.mjs"))
        try await Self.withServer { server in
            let answer = try await Self.get(server, "/client/jetstream.mjs", method: "HEAD")
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"] == "text/javascript; charset=utf-8")
            #expect(answer.headers["content-length"] == String(onDisk.count))
            #expect(answer.body.isEmpty)
        }
    }

    @Test("/demo redirects to /demo/ with 308, keeping the query; never to the request's own path")
    func redirect() async throws {
        try await Self.withServer { server in
            let plain = try await Self.get(server, "/demo")
            #expect(plain.status == 308)
            #expect(plain.headers["location"] == "/demo/")
            #expect(
                try await Self.get(server, "/demo?scope=canvas-2&x=1").headers["location"]
                    == "/demo/?scope=canvas-2&x=1")
            #expect(try await Self.get(server, "//demo").headers["location"] == "/demo/")
        }
    }

    @Test("with another schema /demo/ is 404 problem+json and the client is still served")
    func otherSchema() async throws {
        let other = try Schema.parse(yaml: "models:\n  Note: { text: String }\nscopes:\n  \"note-*\": { root: Note }\n")
        try await Self.withServer(schema: other) { server in
            #expect(!server.gateway.servesDemo)
            for path in ["/demo/", "/demo", "/demo/demo.css", "/demo/demo.mjs"] {
                let answer = try await Self.get(server, path)
                #expect(answer.status == 404, "\(path)")
                #expect(answer.headers["content-type"] == "application/problem+json")
            }
            #expect(try await Self.get(server, "/client/jetstream.mjs").status == 200)
            #expect(try await Self.get(server, "/client/jetstream.d.ts").status == 200)
        }
    }

    @Test("a schema given explicitly that equals the demo schema serves the demo")
    func explicitDemoSchema() async throws {
        let copy = try Schema.parse(yaml: Schema.demoYAML)
        try await Self.withServer(schema: copy) { server in
            let page = try await Self.get(server, "/demo/")
            #expect(server.gateway.servesDemo)
            #expect(page.status == 200)
        }
    }
}
