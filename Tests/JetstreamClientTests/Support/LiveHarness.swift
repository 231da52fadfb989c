import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import Testing

/// One live test's world: a real gateway, one scope name, the peers opened on it and the API to
/// check them against. ``run(_:token:_:)`` stops every peer and kills the gateway when the body
/// ends, also when it throws.
///
/// ```swift
/// try await LiveHarness.run { live in
///     let ada = try await live.peer(createIfMissing: true)
///     let bob = try await live.peer()
///     try await live.waitUntilConverged([ada, bob])
/// }
/// ```
@MainActor
final class LiveHarness {
    let gateway: GatewayProcess
    let scopeName = "canvas-\(UUID().uuidString.lowercased())"
    let token: Client.TokenProvider?
    private(set) var peers: [Peer] = []

    private init(gateway: GatewayProcess, token: Client.TokenProvider?) {
        self.gateway = gateway
        self.token = token
    }

    static func run(
        _ arguments: [String] = [], token: Client.TokenProvider? = nil, _ body: (LiveHarness) async throws -> Void
    ) async throws {
        let gateway = try await GatewayProcess(arguments: arguments)
        let live = LiveHarness(gateway: gateway, token: token)
        do {
            try await body(live)
        } catch {
            await live.close()
            throw error
        }
        await live.close()
    }

    var api: ServerAPI { ServerAPI(url: gateway.url, token: token) }

    /// A backoff short enough for tests that break the connection on purpose.
    static let quickBackoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(400))

    /// A new peer on this scope, or on `scope` (the first one usually creates it); stopped by
    /// ``run(_:token:_:)`` at the end. It talks to the gateway directly, or to `url` (a proxy in
    /// front of it, such as a `LossyLink`).
    func peer(
        scope: String? = nil, canvas: Canvas = Canvas(), createIfMissing: Bool = false,
        transport: FaultyTransport = FaultyTransport(), backoff: Backoff = quickBackoff, clientID: String? = nil,
        through url: URL? = nil
    ) async throws -> Peer {
        var configuration = Client.Configuration()
        configuration.backoff = backoff
        configuration.clientID = clientID
        let peer = try await Peer.open(
            url ?? gateway.url, scope: scope ?? scopeName, canvas: canvas, createIfMissing: createIfMissing,
            transport: transport,
            configuration: configuration, token: token)
        peers.append(peer)
        return peer
    }

    /// Creates the scope (or `scope`) through the API with a shape per label (`PUT`, then one
    /// change set), before any peer opens it.
    func seed(labels: [String], scope: String? = nil) async throws {
        let scopeName = scope ?? self.scopeName
        let root = UUID()
        let created = try await api.request(
            "PUT", "/v1/scopes/\(scopeName)",
            body: ["root": ["clsName": "Canvas", "uuid": .string(root.wireString), "properties": [:]]])
        guard created.status == 201 else { throw HarnessError("PUT \(scopeName): \(created.status)") }
        guard !labels.isEmpty else { return }
        let shapes = labels.map { label in
            SyncFragment(type: .add, uuid: UUID(), clsName: "Shape", properties: ["label": .string(label)])
        }
        let status = try await api.post(
            shapes + [
                SyncFragment(
                    type: .change, uuid: root, clsName: "Canvas",
                    properties: ["shapes": .array(shapes.map { .string($0.uuid.wireString) })])
            ], to: scopeName)
        guard status == 200 else { throw HarnessError("seeding \(scopeName): \(status)") }
    }

    func serverState() async throws -> ScopeState {
        try await api.state(of: scopeName)
    }

    /// Waits until every peer is live with nothing pending at the server's version, and shows the
    /// server's state: through its typed objects and through the scope's model-core state.
    func waitUntilConverged(_ peers: [Peer], within limit: Duration = .seconds(20)) async throws {
        var server = try await serverState()
        try await Poll.until(
            "every peer is idle at the server's version \(server.version) with its state\n"
                + "server: \((try? CanvasSnapshot(server))?.description ?? "?")\n"
                + peers.map(\.summary).joined(separator: "\n"),
            within: limit
        ) {
            server = try await serverState()
            let expected = try CanvasSnapshot(server)
            return peers.allSatisfy { $0.isIdle(at: server.version) && $0.snapshot == expected }
        }
        let expected = try CanvasSnapshot(server)
        for peer in peers {
            #expect(try CanvasSnapshot(peer.scope.currentState()) == expected, "the scope's model state")
            #expect(peer.scope.objectCount == expected.shapes.count + 1, "no object left over in the scope")
        }
    }

    func close() async {
        for peer in peers { await peer.sync.stop() }
        gateway.shutdown()
    }
}
