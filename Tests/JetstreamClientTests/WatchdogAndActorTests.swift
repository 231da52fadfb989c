import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import Testing

/// A silent stream is dropped and resumed (no byte for two heartbeat intervals), and a service may
/// sync a scope on an actor of its own: observers then run on that actor.
@Suite(.serialized) @MainActor struct WatchdogAndActorTests {
    @Test("a stream silent for two heartbeat intervals is dropped and resumed; changes still arrive")
    func silentStreamReconnects() async throws {
        // The server's heartbeat (30 s) is far longer than the one the client expects (0.25 s):
        // every idle stream looks dead to the client's watchdog after 0.5 s.
        try await LiveHarness.run(["--heartbeat-interval", "30"]) { live in
            try await live.seed(labels: ["one"])
            let transport = FaultyTransport()
            var configuration = Client.Configuration()
            configuration.heartbeatInterval = .milliseconds(250)
            configuration.backoff = LiveHarness.quickBackoff
            let watcher = try await Peer.open(
                live.gateway.url, scope: live.scopeName, transport: transport, configuration: configuration)
            try await Poll.until(
                "the watchdog drops the silent stream twice (\(transport.streamRequests.count))", within: .seconds(15)
            ) {
                transport.streamRequests.count >= 3
            }
            #expect(watcher.statuses.contains(.reconnecting(attempt: 1)))
            let writer = try await live.peer()
            writer.canvas.shapes.append(Shape())
            try await Poll.until("the watcher still gets changes (\(watcher.snapshot))") {
                watcher.canvas.shapes.count == 2
            }
            await watcher.sync.stop()
        }
    }

    @Test("a service's own actor: fetch on it, and its observers run there")
    func observersRunOnTheFetchingActor() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["first"])
            let service = CanvasService()
            try await service.start(url: live.gateway.url, scope: live.scopeName)
            let writer = try await live.peer()
            writer.canvas.shapes.append(Shape())
            try await Poll.until("the service's observer ran for the new shape") { await service.addedOnItsActor == 1 }
            #expect(await service.shapeCount == 2)
            await service.stop()
        }
    }
}

/// A Linux service's shape of use: the scope and its objects belong to this actor.
actor CanvasService {
    private var canvas: Canvas?
    private var sync: ScopeSync?
    private(set) var addedOnItsActor = 0

    func start(url: URL, scope name: String) async throws {
        let canvas = Canvas()
        let scope = Scope(name: name, root: canvas)
        sync = try await Client(url: url).fetch(scope)
        canvas.observeCollectionAdd(canvas, key: \.shapes) { [self] _ in
            // Runs on this actor: the sync delivers remote change sets on the fetching actor.
            self.assertIsolated("the observer runs on the service's actor")
            addedOnItsActor += 1
        }
        self.canvas = canvas
    }

    var shapeCount: Int { canvas?.shapes.count ?? 0 }

    func stop() async {
        await sync?.stop()
    }
}
