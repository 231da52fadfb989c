import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import Testing

/// An app's life cycle against the real gateway: ``Client/suspend()`` closes the shared stream and
/// holds back changes and presence, ``Client/resume()`` reconnects at once from the last id and
/// sends what was held, and ``Client/networkBecameAvailable()`` cuts a backoff short.
@Suite("Suspend and resume: the app's life cycle", .serialized)
@MainActor
struct SuspendResumeLiveTests {
    /// A backoff no test outlives: a reconnection seen within a poll's bound was made at once.
    /// (Full jitter draws a delay under 20 s with probability 2·10⁻⁵.)
    static let endlessBackoff = Backoff(initial: .seconds(1_000_000), maximum: .seconds(1_000_000))

    /// A client of the live gateway with its own fault-injecting transport.
    private static func client(
        _ live: LiveHarness, transport: FaultyTransport, backoff: Backoff = LiveHarness.quickBackoff,
        presenceTTL: Duration = .seconds(30)
    ) -> Client {
        var configuration = Client.Configuration()
        configuration.backoff = backoff
        configuration.presenceTTL = presenceTTL
        return Client(url: live.gateway.url, transport: transport, configuration: configuration)
    }

    /// How many times each version of `scope`'s changeset events came on the streams `transport` read.
    private static func changeSetCounts(of scope: String, in transport: FaultyTransport) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for event in transport.events(named: "changeset") where event["scope"]?.string == scope {
            if let version = event["version"]?.number?.int64Value { counts[Int(version), default: 0] += 1 }
        }
        return counts
    }

    private static func posts(_ transport: FaultyTransport) -> [String] {
        transport.requestLines.filter { $0.hasPrefix("POST ") }
    }

    @Test(
        "suspend closes the stream; what another client writes meanwhile arrives after resume once and in order, and a local change reaches the server once"
    )
    func suspendThenResume() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["first"])
            let writer = try await live.peer()
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            let canvas = Canvas()
            let sync = try await client.fetch(Scope(name: live.scopeName, root: canvas))
            var added: [String] = []
            canvas.observeCollectionAdd(canvas, key: \.shapes) { shape in added.append(shape.label) }
            try await Poll.until("live, one stream each for the client and the writer, on the server") {
                let counted = try await live.api.metric("jetstream_sse_streams_open")
                return sync.status == .live && transport.openStreamCount == 1 && counted == 2
            }
            // One set read before the suspension: the client holds an event id.
            let early = Shape()
            early.label = "early"
            writer.canvas.shapes.append(early)
            try await Poll.until("the client read the early set") { canvas.shapes.count == 2 }
            var statuses: [ScopeSync.Status] = []
            sync.onStatusChange { statuses.append($0) }
            let suspendedAt = sync.version
            let streamsBefore = transport.streamTargets.count

            await client.suspend()
            await client.suspend()
            #expect(client.isSuspended && sync.status == .suspended)
            #expect(statuses == [.suspended], "suspending twice is suspending once: \(statuses)")
            try await Poll.until("the stream request ended, here and on the server") {
                let counted = try await live.api.metric("jetstream_sse_streams_open")
                return transport.openStreamCount == 0 && counted == 1
            }

            // A local change while suspended: shown at once, queued, not sent.
            let local = Shape()
            local.label = "local while suspended"
            canvas.shapes.append(local)
            try await Poll.until("the local change is a pending set") { sync.pendingCount == 1 }
            // Meanwhile the writer's three sets reach the server (time for the held set to go, were
            // it not held, and for a reconnection, were one made).
            for index in 0..<3 {
                let shape = Shape()
                shape.label = "w\(index)"
                writer.scope.modify { writer.canvas.shapes.append(shape) }
                try await Poll.until("w\(index) is confirmed") { writer.sync.pendingCount == 0 }
            }
            let written = try await live.serverState().version
            #expect(Self.posts(transport).isEmpty, "nothing sent while suspended: \(transport.requestLines)")
            #expect(transport.streamTargets.count == streamsBefore, "no stream while suspended")
            #expect(sync.version == suspendedAt && !added.contains { $0.hasPrefix("w") }, "nothing received: \(added)")
            #expect(sync.status == .suspended && sync.pendingCount == 1)

            await client.resume()
            await client.resume()
            #expect(!client.isSuspended)
            try await live.waitUntilConverged([writer])
            let final = try await live.serverState().version
            try await Poll.until("the client converges at \(final) (\(sync.status), \(sync.version))") {
                sync.status == .live && sync.version == final && sync.pendingCount == 0
                    && CanvasSnapshot(canvas) == writer.snapshot
            }
            #expect(final == written + 1, "the local set is one more version")
            // The stream came back from the last id, once; every change set came once, in order.
            let resumed = transport.streamTargets.dropFirst(streamsBefore)
            #expect(resumed.count == 1, "one stream at resume: \(transport.streamScopes)")
            #expect(
                resumed.first?.lastEventID?.hasPrefix("m") == true, "from the last id: \(resumed.map(\.lastEventID))")
            #expect(transport.streamScopes.last == [live.scopeName])
            let counts = Self.changeSetCounts(of: live.scopeName, in: transport)
            #expect(counts == Dictionary(uniqueKeysWithValues: (suspendedAt...final).map { ($0, 1) }), "\(counts)")
            #expect(transport.eventCount("reset") == 0 && transport.eventCount("snapshot") == 0)
            #expect(
                added.filter { $0 != "local while suspended" } == ["early", "w0", "w1", "w2"],
                "each applied once, in order: \(added)")
            // The local set reached the server once, after the resume.
            #expect(Self.posts(transport).count == 1, "\(transport.requestLines)")
            let labels = writer.canvas.shapes.map(\.label)
            #expect(labels.filter { $0 == "local while suspended" }.count == 1, "\(labels)")
            let history = try await live.api.changeSets(of: live.scopeName)
            #expect(history.count(where: { $0.encodedString().contains("local while suspended") }) == 1)
            #expect(statuses.first == .suspended && statuses.last == .live, "\(statuses)")
            #expect(!statuses.dropFirst().contains(.suspended), "\(statuses)")
            await sync.stop()
        }
    }

    @Test("resume skips the backoff: a stream waiting out a very long one reconnects at once")
    func resumeSkipsTheBackoff() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport, backoff: Self.endlessBackoff)
            let sync = try await client.fetch(Scope(name: live.scopeName, root: Canvas()))
            try await Poll.until("live") { sync.status == .live }

            // The stream drops: the client waits out its (endless) backoff.
            transport.cutStreams()
            try await Poll.until("backing off (\(sync.status))") { sync.status == .reconnecting(attempt: 1) }
            let requests = transport.streamRequests.count

            await client.suspend()
            #expect(sync.status == .suspended)
            #expect(transport.streamRequests.count == requests, "suspending makes no connection")
            await client.resume()
            try await Poll.until("reconnected at once (\(sync.status), \(transport.streamRequests.count) requests)") {
                sync.status == .live && transport.openStreamCount == 1
            }
            #expect(transport.streamRequests.count == requests + 1, "one connection: the one at resume")
            await sync.stop()
        }
    }

    @Test("the network back during a backoff reconnects at once, and sends a change waiting to be sent again")
    func networkBackCutsTheBackoff() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport, backoff: Self.endlessBackoff)
            let canvas = Canvas()
            let sync = try await client.fetch(Scope(name: live.scopeName, root: canvas))
            try await Poll.until("live") { sync.status == .live }

            // The network goes: the stream drops (and waits out its backoff), and a change's POST fails.
            transport.failRequests(1)
            transport.cutStreams()
            try await Poll.until("backing off (\(sync.status))") { sync.status == .reconnecting(attempt: 1) }
            canvas.shapes[0].label = "written offline"
            try await Poll.until("the POST failed and waits out its backoff") {
                Self.posts(transport).count == 1 && sync.pendingCount == 1
            }
            let requests = transport.streamRequests.count
            #expect(transport.openStreamCount == 0)

            await client.networkBecameAvailable()
            try await Poll.until("reconnected and sent at once (\(sync.status), \(transport.requestLines))") {
                sync.status == .live && transport.openStreamCount == 1 && sync.pendingCount == 0
            }
            #expect(transport.streamRequests.count == requests + 1, "one connection, made at once")
            #expect(Self.posts(transport).count == 2, "the set sent again once: \(transport.requestLines)")
            let server = try await live.serverState()
            #expect(try CanvasSnapshot(server).shapes.map(\.label) == ["written offline"])

            // Live, the network coming back changes nothing.
            await client.networkBecameAvailable()
            #expect(transport.streamRequests.count == requests + 1 && sync.status == .live)
            await sync.stop()
        }
    }

    @Test("a sync stopped while its change set waits out a (cuttable) backoff stops at once")
    func stopDuringSendBackoff() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport, backoff: Self.endlessBackoff)
            let canvas = Canvas()
            let sync = try await client.fetch(Scope(name: live.scopeName, root: canvas))
            try await Poll.until("live") { sync.status == .live }
            transport.failRequests(1)
            canvas.shapes[0].label = "never sent"
            try await Poll.until("the POST failed and waits out its backoff") {
                Self.posts(transport).count == 1 && sync.pendingCount == 1
            }
            let stopping = Task { await sync.stop() }
            var stopped = false
            Task {
                await stopping.value
                stopped = true
            }
            try await Poll.until("the stop returns") { stopped }
            #expect(Self.posts(transport).count == 1)
        }
    }

    @Test("suspended, presence is not refreshed (the member expires for the others); resume announces it again")
    func presenceWhileSuspended() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let adaTransport = FaultyTransport()
            let ada = Self.client(live, transport: adaTransport, presenceTTL: .seconds(2))
            let adaSync = try await ada.fetch(Scope(name: live.scopeName, root: Canvas()))
            let bob = try await live.peer()
            try await Poll.until("both live") { adaSync.status == .live && bob.sync.status == .live }
            try await bob.sync.presence.set(["name": "Bob"])
            try await adaSync.presence.set(["name": "Ada"])
            try await Poll.until("each sees the other") {
                bob.sync.presence.others.map(\.client) == [ada.presenceID]
                    && adaSync.presence.others.map(\.data) == [["name": "Bob"]]
            }

            await ada.suspend()
            #expect(adaSync.presence.others.isEmpty, "who is here is not known while suspended")
            // Refreshed every second while running, ada would never expire; suspended she does.
            try await Poll.until("bob sees ada expire (ttl 2 s + at most 2 s)", within: .seconds(15)) {
                bob.sync.presence.others.isEmpty
            }
            let puts = adaTransport.requestLines.filter { $0.hasPrefix("PUT ") }.count

            await ada.resume()
            try await Poll.until("bob sees ada again, and ada bob") {
                bob.sync.presence.others.map(\.client) == [ada.presenceID]
                    && adaSync.presence.others.map(\.data) == [["name": "Bob"]]
            }
            #expect(adaTransport.requestLines.filter { $0.hasPrefix("PUT ") }.count > puts, "announced again at resume")
            #expect(bob.sync.presence.others.first?.data == ["name": "Ada"], "with the data set before")
            await adaSync.stop()
        }
    }

    @Test("a scope fetched while suspended is loaded, and joins the stream at resume")
    func fetchWhileSuspended() async throws {
        try await LiveHarness.run { live in
            let other = "\(live.scopeName)-b"
            try await live.seed(labels: ["a"])
            try await live.seed(labels: ["b"], scope: other)
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            let first = try await client.fetch(Scope(name: live.scopeName, root: Canvas()))
            try await Poll.until("live") { first.status == .live }
            let streams = transport.streamTargets.count

            await client.suspend()
            let canvas = Canvas()
            let second = try await client.fetch(Scope(name: other, root: canvas))
            #expect(second.status == .suspended && canvas.shapes.map(\.label) == ["b"])
            #expect(transport.streamTargets.count == streams, "no stream while suspended")
            let writer = try await live.peer(scope: other)
            writer.canvas.shapes.append(Shape())
            try await Poll.until("the writer's set is confirmed") { writer.sync.pendingCount == 0 }

            await client.resume()
            try await Poll.until("both live, the new scope with the writer's set") {
                first.status == .live && second.status == .live && canvas.shapes.count == 2
            }
            #expect(transport.streamTargets.count == streams + 1, "\(transport.streamScopes)")
            #expect(transport.streamScopes.last?.count == 2)
            await first.stop()
            await second.stop()
        }
    }
}
