import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import Testing

/// Presence between clients against the real gateway: `sync.presence.set`, `others` (self excluded),
/// `onChange`, the refresh at half the ttl, the leave when the sync stops, a member that expires,
/// and the roster starting over when the stream reconnects.
@Suite("Presence between clients", .serialized)
@MainActor
struct PresenceLiveTests {
    /// A client with its own transport and `ttl`, and its sync of `live`'s scope.
    private static func open(
        _ live: LiveHarness, ttl: Duration = .seconds(30)
    ) async throws -> PresencePeer {
        let transport = FaultyTransport()
        var configuration = Client.Configuration()
        configuration.backoff = LiveHarness.quickBackoff
        configuration.presenceTTL = ttl
        let client = Client(url: live.gateway.url, transport: transport, configuration: configuration)
        let sync = try await client.fetch(Scope(name: live.scopeName, root: Canvas()))
        try await Poll.until("live") { sync.status == .live }
        return PresencePeer(client: client, sync: sync, transport: transport)
    }

    @Test("set, others without self, onChange, updates, a refresh at half the ttl, and the leave on stop")
    func twoClients() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await Self.open(live, ttl: .seconds(3))
            let bob = try await Self.open(live)
            var bobSaw: [[PresenceMember]] = []
            bob.sync.presence.onChange { others in bobSaw.append(others) }
            #expect(ada.client.presenceID != bob.client.presenceID)

            try await ada.sync.presence.set(["x": 10, "name": "Ada"])
            try await Poll.until("bob sees ada (\(bob.sync.presence.others))") {
                bob.sync.presence.others.map(\.client) == [ada.client.presenceID]
            }
            let seen = bob.sync.presence.others.first
            #expect(seen?.data == ["x": 10, "name": "Ada"])
            #expect(seen?.subject == nil)
            #expect(bobSaw.last == bob.sync.presence.others, "onChange told bob")

            try await bob.sync.presence.set(["x": 1])
            try await Poll.until("ada sees bob, and only bob") {
                ada.sync.presence.others.map(\.client) == [bob.client.presenceID]
            }
            #expect(bob.sync.presence.others.map(\.client) == [ada.client.presenceID], "bob never sees himself")

            try await ada.sync.presence.set(["x": 20, "name": "Ada"])
            try await Poll.until("bob sees ada's update") { bob.sync.presence.others.first?.data["x"] == 20 }

            // Ada's ttl is 3 s: she stays present because the sync announces her again every 1.5 s.
            let presencePath = "PUT /v1/scopes/\(live.scopeName)/presence/\(ada.client.presenceID)?ttl=3"
            try await Poll.until("ada's presence is refreshed at least 3 times (\(ada.transport.requestLines))") {
                ada.transport.requestLines.filter { $0 == presencePath }.count >= 5
            }
            let adaID = ada.client.presenceID
            let lists = bobSaw.map { others in others.map(\.client) }
            let firstWithAda = lists.firstIndex { $0.contains(adaID) } ?? lists.endIndex
            #expect(firstWithAda < lists.endIndex, "bob was told of ada")
            let withoutAda = lists[firstWithAda...].filter { !$0.contains(adaID) }
            #expect(withoutAda.isEmpty, "ada never left bob's list while her sync ran: \(lists)")

            // The last handle's stop withdraws her at once (DELETE), not at expiry.
            await ada.sync.stop()
            #expect(
                ada.transport.requestLines.last
                    == "DELETE /v1/scopes/\(live.scopeName)/presence/\(ada.client.presenceID)")
            try await Poll.until("bob sees ada leave") { bob.sync.presence.others.isEmpty }
            #expect(bobSaw.last == [])
            await bob.sync.stop()
        }
    }

    @Test("a member nobody refreshes expires; a reconnected stream starts the roster over from the server's joins")
    func expiryAndReconnection() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let bob = try await Self.open(live)
            var bobSaw: [[String]] = []
            bob.sync.presence.onChange { others in bobSaw.append(others.map(\.client)) }

            // A client that announces itself once with a 1 s ttl and never again.
            let put = try await live.api.request(
                "PUT", "/v1/scopes/\(live.scopeName)/presence/brief-1?ttl=1", body: ["x": 1])
            #expect(put.status == 204)
            try await Poll.until("bob sees brief-1 join") { bob.sync.presence.others.map(\.client) == ["brief-1"] }
            try await Poll.until("brief-1 expires (ttl 1 s + at most 2 s)", within: .seconds(10)) {
                bob.sync.presence.others.isEmpty
            }

            // A member that stays; bob's stream drops: the roster starts over and the server's join
            // after the reconnection brings the member back.
            let stays = try await live.api.request(
                "PUT", "/v1/scopes/\(live.scopeName)/presence/stays-1?ttl=300", body: ["x": 2])
            #expect(stays.status == 204)
            try await Poll.until("bob sees stays-1") { bob.sync.presence.others.map(\.client) == ["stays-1"] }
            let before = bobSaw.count
            let streams = bob.transport.streamRequests.count
            bob.transport.cutStreams()
            try await Poll.until("bob reconnects and sees stays-1 again (\(bobSaw))") {
                bob.transport.streamRequests.count > streams && bob.sync.status == .live
                    && bob.sync.presence.others.map(\.client) == ["stays-1"]
            }
            #expect(
                Array(bobSaw.dropFirst(before)) == [[], ["stays-1"]],
                "cleared at the reconnection, then the server's join")
            await bob.sync.stop()
        }
    }
}

/// A client of its own with one sync, as ``PresenceLiveTests`` opens them.
@MainActor
final class PresencePeer {
    let client: Client
    let sync: ScopeSync
    let transport: FaultyTransport

    init(client: Client, sync: ScopeSync, transport: FaultyTransport) {
        self.client = client
        self.sync = sync
        self.transport = transport
    }
}
