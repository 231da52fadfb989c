import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Testing

/// The schema's write rules seen from the Swift client, against the real gateway with HS256
/// tokens for two subjects: a change the server refuses as `forbidden` shows at once and springs
/// back, and a change of an `immutable` property is refused locally, before anything is sent.
@Suite("Write rules through the Swift client", .serialized)
@MainActor
struct WriteRulesLiveTests {
    /// The demo schema with `rules: {write: owner, delete: owner}` on `Shape` and its `kind`
    /// immutable, as a JSON schema file.
    static func writeSchema(to url: URL) throws {
        guard case .object(var document) = Schema.demo.jsonValue, case .object(var models)? = document["models"],
            case .object(let shape)? = models["Shape"]
        else { throw HarnessError("the demo schema is not an object of models") }
        var ruled: JSONObject = ["rules": ["write": "owner", "delete": "owner"]]
        for member in shape {
            if member.key == "kind", case .object(var kind) = member.value {
                kind["immutable"] = true
                ruled[member.key] = .object(kind)
            } else {
                ruled[member.key] = member.value
            }
        }
        models["Shape"] = .object(ruled)
        document["models"] = .object(models)
        try Data(JSONValue.object(document).encoded()).write(to: url)
    }

    @Test(
        "bob's change to ada's shape shows at once, is refused as forbidden and springs back; ada's immutable kind is refused locally"
    )
    func ownershipAndImmutability() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("write-rules-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = "a shared secret of well over thirty-two bytes for the write rules"
        try Data(secret.utf8).write(to: directory.appendingPathComponent("secret"))
        try Self.writeSchema(to: directory.appendingPathComponent("schema.json"))
        let minter = await TokenMinter(secret: secret)
        let adasToken: Client.TokenProvider = { try await minter.mint(lifetime: 600, subject: "ada") }
        let bobsToken: Client.TokenProvider = { try await minter.mint(lifetime: 600, subject: "bob") }

        let arguments = [
            "--jwt-secret-file", directory.appendingPathComponent("secret").path,
            "--schema", directory.appendingPathComponent("schema.json").path,
        ]
        try await LiveHarness.run(arguments, token: adasToken) { live in
            let ada = try await live.peer(createIfMissing: true)
            let bob = try await Peer.open(live.gateway.url, scope: live.scopeName, token: bobsToken)
            defer { Task { await bob.sync.stop() } }

            let shape = Shape()
            shape.label = "ada's"
            ada.scope.modify { ada.canvas.shapes.append(shape) }
            try await Poll.until("bob sees ada's shape (bob: \(bob.summary))") { bob.shape(shape.uuid) != nil }
            let owner = try await live.api.request(
                "GET", "/v1/scopes/\(live.scopeName)/objects/\(shape.uuid.wireString)")
            #expect(owner.status == 200 && owner.body?["owner"] == "ada")
            let version = bob.sync.version

            // Bob moves it: his view shows it at once; the server refuses it; it springs back.
            let bobsCopy = try #require(bob.shape(shape.uuid))
            bob.scope.modify { bobsCopy.x = 50 }
            #expect(bobsCopy.x == 50, "latency compensation: the edit shows before the server answers")
            try await Poll.until("bob's move is refused (bob: \(bob.summary))") { !bob.serverRejections.isEmpty }
            let refusal = try #require(bob.serverRejections.first)
            #expect(refusal.status == 422)
            #expect(refusal.replies.first?.error?.kind == .forbidden)
            #expect(refusal.replies.first?.error?.property == "x")
            #expect(refusal.reasons.contains { $0.contains("only its owner 'ada'") }, "\(refusal.reasons)")
            try await Poll.until("bob's view springs back") { bobsCopy.x == 0 && bob.sync.pendingCount == 0 }
            #expect(try await live.serverState().version == version, "nothing applied")

            // Ada changes the immutable kind: refused locally, nothing sent.
            ada.scope.modify { shape.kind = .oval }
            #expect(shape.kind == .rect, "reverted before modify returns")
            let local = try #require(ada.localRejections.first)
            #expect(local.replies.first?.error?.kind == .immutable)
            #expect(local.replies.first?.error?.property == "kind")
            #expect(ada.sync.pendingCount == 0)

            // Ada's own move goes through and reaches bob.
            ada.scope.modify { shape.x = 30 }
            try await Poll.until("bob sees ada's move") { bob.shape(shape.uuid)?.x == 30 }
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.serverRejections.isEmpty)
            await bob.sync.stop()
        }
    }
}
