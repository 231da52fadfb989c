import Foundation
import JetstreamModel
import Logging
import PostgresStore
import Store
import Synchronization
import TestSupport
import Testing

@testable import ScopeEngine

/// Presence on two engines — two gateway nodes — on one PostgreSQL database, each relaying through
/// its store's `NOTIFY jetstream_presence` (docs/store.md, "Presence across nodes"): what is set,
/// updated or removed on one node reaches the other's presence and subscribers; expiry happens on
/// both; a node never applies its own notices; texts that are not notices, or name a scope the
/// node does not host, change nothing.
@Suite struct PresenceAcrossNodesTests {
    /// Two nodes on a fresh database, each with its store's relay; both follow the store and the relay.
    final class TwoNodes: Sendable {
        let database: String
        let stores: [PostgresStore]
        let relays: [BroadcastPresenceRelay]
        let engines: [ScopeEngine]

        init() async throws {
            let cluster = try await PostgresTestCluster.shared()
            let database = try await cluster.createDatabase()
            var storeConfiguration = PostgresStore.Configuration()
            storeConfiguration.pollInterval = .milliseconds(500)
            storeConfiguration.readerConnections = 2
            let stores = try (0..<2).map { _ in
                try PostgresStore(url: cluster.url(database: database), configuration: storeConfiguration)
            }
            let relays = stores.map { store in
                BroadcastPresenceRelay(send: { store.publishPresence($0) }, receive: { store.followPresence($0) })
            }
            self.database = database
            self.stores = stores
            self.relays = relays
            engines = relays.indices.map { index in
                var configuration = ScopeEngineConfiguration(schema: .demo)
                configuration.presenceRelay = relays[index]
                return ScopeEngine(configuration: configuration, store: stores[index], logger: Logger(label: "test"))
            }
            for (engine, relay) in zip(engines, relays) {
                #expect(engine.followSharedStore())
                relay.follow { [weak engine] in engine?.applyRemotePresence($0) }
            }
            // A text sent before the other node LISTENs is not delivered to it.
            #expect(await waitUntil(timeout: .seconds(20)) { stores.allSatisfy(\.statistics.listenerUp) })
        }

        func close() {
            for store in stores { store.close() }
            (try? PostgresTestCluster.shared())?.dropDatabase(database)
        }

        /// Creates `name` on node 0 and waits until node 1 hosts it too.
        func createCanvas(_ name: String) async throws -> [ScopeHandle] {
            let first = try await engines[0].create(name: name, rootClassName: "Canvas")
            #expect(await waitUntil(timeout: .seconds(20)) { self.engines[1].handle(named: name) != nil })
            return [first, try #require(engines[1].handle(named: name))]
        }
    }

    /// What a presence event says: (client, state, data).
    struct Seen: Equatable {
        let client: String
        let state: String
        let data: JSONValue?
    }

    static func presence(_ recorder: Recorder) -> [Seen] {
        recorder.events.filter { $0.kind == .presence }.compactMap { event in
            guard let value = try? JSONParser.parse(event.payload), let client = value["client"]?.string,
                let state = value["state"]?.string
            else { return nil }
            return Seen(client: client, state: state, data: value["data"])
        }
    }

    @Test("a member set on one node joins, updates and leaves on the other node's presence and subscribers")
    func setUpdateAndLeaveReachTheOtherNode() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-presence-1")
        let recorders = [Recorder(), Recorder()]
        for node in 0..<2 { nodes.engines[node].subscribe(recorders[node], to: handles[node], from: .after(0)) }
        let (a, b) = (nodes.engines[0], nodes.engines[1])

        try a.setPresence(of: "window-1", in: handles[0], subject: "ada", data: ["x": 1], ttl: .seconds(60))
        #expect(await waitUntil(timeout: .seconds(10)) { b.presence(in: handles[1]).count == 1 })
        let there = try #require(b.presence(in: handles[1]).first)
        #expect(there == a.presence(in: handles[0]).first)
        #expect(there.subject == "ada" && there.data == ["x": 1])
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(recorders[1]).count == 1 })
        #expect(Self.presence(recorders[1]) == [Seen(client: "window-1", state: "join", data: ["x": 1])])

        try a.setPresence(of: "window-1", in: handles[0], subject: "ada", data: ["x": 2], ttl: .seconds(60))
        #expect(await waitUntil(timeout: .seconds(10)) { b.presence(in: handles[1]).first?.data == ["x": 2] })
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(recorders[1]).count == 2 })
        #expect(Self.presence(recorders[1]).last == Seen(client: "window-1", state: "update", data: ["x": 2]))

        // A member set on B reaches A; notifications reach a listener in commit order, so once A
        // has B's member it has also passed its own two notices: they must not have come back.
        try b.setPresence(of: "window-2", in: handles[1], subject: nil, data: ["y": 1], ttl: .seconds(60))
        #expect(await waitUntil(timeout: .seconds(10)) { a.presence(in: handles[0]).count == 2 })
        #expect(
            Self.presence(recorders[0]) == [
                Seen(client: "window-1", state: "join", data: ["x": 1]),
                Seen(client: "window-1", state: "update", data: ["x": 2]),
                Seen(client: "window-2", state: "join", data: ["y": 1]),
            ])
        #expect(a.presence(in: handles[0]).last?.subject == nil)

        try a.removePresence(of: "window-1", in: handles[0], subject: "ada")
        #expect(await waitUntil(timeout: .seconds(10)) { b.presence(in: handles[1]).map(\.client) == ["window-2"] })
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(recorders[1]).count == 4 })
        #expect(Self.presence(recorders[1]).last == Seen(client: "window-1", state: "leave", data: nil))

        // A subscriber that joins B later gets a join for each member, remote ones included.
        let late = Recorder()
        b.subscribe(late, to: handles[1], from: .after(0))
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(late).count == 1 })
        #expect(Self.presence(late) == [Seen(client: "window-2", state: "join", data: ["y": 1])])
    }

    @Test("a member that stops refreshing leaves on the other node too, at its own expiry")
    func expiryReachesTheOtherNode() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-presence-expiry")
        let recorder = Recorder()
        nodes.engines[1].subscribe(recorder, to: handles[1], from: .after(0))
        try nodes.engines[0].setPresence(
            of: "brief", in: handles[0], subject: nil, data: ["on": true], ttl: .seconds(1))
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(recorder).count >= 1 })
        #expect(await waitUntil(timeout: .seconds(10)) { Self.presence(recorder).count == 2 })
        #expect(
            Self.presence(recorder) == [
                Seen(client: "brief", state: "join", data: ["on": true]),
                Seen(client: "brief", state: "leave", data: nil),
            ])
        #expect(nodes.engines[1].presence(in: handles[1]).isEmpty)
        #expect(nodes.engines[0].presence(in: handles[0]).isEmpty)
    }

    @Test("a notice about a scope the node does not host, or a text that is no notice, changes nothing")
    func unknownScopesAndTextsAreSkipped() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-presence-known")
        let recorder = Recorder()
        nodes.engines[1].subscribe(recorder, to: handles[1], from: .after(0))
        let stray = PresenceMember(client: "stray", subject: nil, data: ["x": 0], expiresAt: Int64.max / 2)
        nodes.relays[0].publish(PresenceNotice(scope: "canvas-nowhere", client: "stray", member: stray))
        #expect(nodes.stores[0].publishPresence(#"{"scope":"canvas-presence-known"}"#))
        #expect(nodes.stores[0].publishPresence(#"{"scope":"canvas-presence-known","client":"c","data":{}}"#))
        // Sent after those from the same connection, so delivered after them.
        try nodes.engines[0].setPresence(of: "marker", in: handles[0], subject: nil, data: [:], ttl: .seconds(60))
        #expect(await waitUntil(timeout: .seconds(10)) { !nodes.engines[1].presence(in: handles[1]).isEmpty })
        #expect(nodes.engines[1].presence(in: handles[1]).map(\.client) == ["marker"])
        #expect(Self.presence(recorder) == [Seen(client: "marker", state: "join", data: [:])])
        #expect(nodes.engines[1].handle(named: "canvas-nowhere") == nil)
    }

    @Test("the store sends a JSON object's text to the other nodes with its node id first, never back to itself")
    func storeTextsCarryTheNodeAndStayUnderTheLimit() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let received = Mutex<[[String]]>([[], []])
        // Replaces the engines' handlers: these stores now deliver here.
        for node in 0..<2 {
            nodes.stores[node].followPresence { text in received.withLock { $0[node].append(text) } }
        }
        #expect(nodes.stores[0].publishPresence(#"{"n":1}"#))
        #expect(nodes.stores[0].publishPresence("{}"))
        #expect(!nodes.stores[0].publishPresence("[1]"))
        let limit = PostgresStore.maximumPresencePayload
        // {"node":"<id>","s":"aaa…"}: the text's own braces become the payload's.
        let overhead = (#"{"node":""# + nodes.stores[0].presenceNodeID + #"","s":""#).utf8.count + #""}"#.utf8.count
        let filler = { (bytes: Int) in #"{"s":""# + String(repeating: "a", count: bytes) + #""}"# }
        #expect(nodes.stores[0].publishPresence(filler(limit - overhead)))
        #expect(!nodes.stores[0].publishPresence(filler(limit - overhead + 1)))
        #expect(nodes.stores[1].publishPresence(#"{"n":2}"#))
        #expect(await waitUntil(timeout: .seconds(10)) { received.withLock { $0[0].count } == 1 })
        #expect(await waitUntil(timeout: .seconds(10)) { received.withLock { $0[1].count } == 3 })
        let texts = received.withLock { $0 }
        try #require(texts[1].count == 3)
        let node0 = nodes.stores[0].presenceNodeID
        #expect(texts[1][0] == #"{"node":""# + node0 + #"","n":1}"#)
        #expect(texts[1][1] == #"{"node":""# + node0 + #""}"#)
        #expect(texts[1][2].utf8.count == limit)
        #expect(texts[0] == [#"{"node":""# + nodes.stores[1].presenceNodeID + #"","n":2}"#])
        #expect(node0 != nodes.stores[1].presenceNodeID)
    }
}
