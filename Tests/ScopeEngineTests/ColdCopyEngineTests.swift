import Foundation
import JetstreamModel
import Logging
import PostgresStore
import Store
import Synchronization
import TestSupport
import Testing

@testable import ScopeEngine

/// Copies no client of a node uses are left behind by its follower and caught up on their next
/// use (docs/store.md, "Cold copies"): node 0 writes, node 1 follows the store with no client of
/// its own until a test makes one.
@Suite struct ColdCopyEngineTests {
    /// Two nodes on a fresh database following the store; a scope created on node 0 and hosted by both.
    final class Nodes: Sendable {
        let database: String
        let stores: [PostgresStore]
        let engines: [ScopeEngine]
        let scope: String

        init(snapshotInterval: Int = 1000) async throws {
            let cluster = try await PostgresTestCluster.shared()
            let database = try await cluster.createDatabase()
            var storeConfiguration = PostgresStore.Configuration()
            storeConfiguration.readerConnections = 2
            var configuration = ScopeEngineConfiguration(schema: .demo, snapshotInterval: snapshotInterval)
            configuration.conflictRetries = 8
            let stores = try (0..<2).map { _ in
                try PostgresStore(url: cluster.url(database: database), configuration: storeConfiguration)
            }
            self.database = database
            self.stores = stores
            engines = stores.map { ScopeEngine(configuration: configuration, store: $0, logger: Logger(label: "cold")) }
            for engine in engines { #expect(engine.followSharedStore()) }
            scope = "canvas-cold-\(UUID().uuidString.prefix(8).lowercased())"
            _ = try await engines[0].create(name: scope, rootClassName: "Canvas")
            let engines = self.engines
            let scope = self.scope
            #expect(await waitUntil(timeout: .seconds(20)) { engines[1].handle(named: scope) != nil })
        }

        func handle(_ node: Int) throws -> ScopeHandle { try #require(engines[node].handle(named: scope)) }

        /// Renames the canvas `count` times on node 0; returns the last version answered.
        func renameOnWriter(_ count: Int, from first: Int = 0) async throws -> Int {
            var version = 0
            for index in first..<(first + count) {
                let handle = try handle(0)
                let outcome = await SharedStoreEngineTests.submit(
                    EngineFixture.rename(handle, to: "name \(index)"), on: engines[0], to: handle)
                version = try #require(outcome.version, "node 0 refused a rename: \(outcome)")
            }
            return version
        }

        /// Waits until node 1's copy has been told of `version` (the follower's note).
        func waitForAnnouncement(of version: Int) async throws -> Bool {
            let handle = try handle(1)
            return await waitUntil(timeout: .seconds(20)) {
                handle.runtime.withLock { $0.announcedVersion } >= version
            }
        }

        /// Waits until `node` knows of `version` one way or the other: noted (a cold copy) or
        /// already read (a copy its own recent write keeps followed, or a catch-up that read
        /// past it before the notice came).
        func waitFor(node: Int, toKnow version: Int) async throws -> Bool {
            let handle = try handle(node)
            return await waitUntil(timeout: .seconds(20)) {
                handle.runtime.withLock { max($0.announcedVersion, $0.committed.version) } >= version
            }
        }

        func close() {
            for store in stores { store.close() }
            (try? PostgresTestCluster.shared())?.dropDatabase(database)
        }
    }

    @Test("a copy nobody uses on its node is only noted behind, and catches up on its next read")
    func aColdCopyCatchesUpOnUse() async throws {
        let nodes = try await Nodes()
        defer { nodes.close() }
        let last = try await nodes.renameOnWriter(5)
        #expect(try await nodes.waitForAnnouncement(of: last))
        let cold = try nodes.handle(1)
        // Noted, not read: the follower applied nothing.
        #expect(cold.lagsStore)
        #expect(cold.version < last)
        let current = try #require(await nodes.engines[1].current(cold))
        #expect(current.version == last)
        #expect(!current.lagsStore)
        #expect(current.committedState.root["name"] == .string("name 4"))
        #expect(current.encodedState().json == (try nodes.handle(0)).encodedState().json)
    }

    @Test("a subscriber on a cold copy starts at the store's latest version, then follows live")
    func aSubscriberWarmsTheCopy() async throws {
        let nodes = try await Nodes()
        defer { nodes.close() }
        let last = try await nodes.renameOnWriter(3)
        #expect(try await nodes.waitForAnnouncement(of: last))
        let recorder = Recorder()
        // Registered only once the copy caught up and the subscriber has its snapshot: a stream
        // of several scopes subscribes the next one then, so its snapshots keep their order.
        let seenWhenRegistered = Mutex<[Recorder.Received]?>(nil)
        nodes.engines[1].subscribe(recorder, to: try nodes.handle(1), from: .fresh) {
            seenWhenRegistered.withLock { $0 = recorder.received }
        }
        #expect(await recorder.waitFor(count: 1, timeout: .seconds(20)))
        #expect(recorder.received.first == Recorder.Received(kind: .snapshot, version: last))
        #expect(await waitUntil(timeout: .seconds(20)) { seenWhenRegistered.withLock { $0 } != nil })
        #expect(seenWhenRegistered.withLock { $0 } == [Recorder.Received(kind: .snapshot, version: last)])
        // Followed now: node 0's next versions arrive without any request on node 1.
        let later = try await nodes.renameOnWriter(2, from: 3)
        #expect(await waitUntil(timeout: .seconds(20)) { recorder.changesetVersions == [last + 1, later] })
        #expect(try !nodes.handle(1).lagsStore)
    }

    @Test("a write through a cold copy is judged on the store's latest version: no refusal, no lost race")
    func aWriteToAColdCopyIsJudgedAtTheHead() async throws {
        let nodes = try await Nodes()
        defer { nodes.close() }
        for round in 0..<5 {
            // Node 0 adds a shape; node 1, whose copy is cold and behind, is asked to move it.
            let writer = try nodes.handle(0)
            let shape = UUID()
            let added = await SharedStoreEngineTests.submit(
                EngineFixture.addShape(shape, x: 1, to: writer), on: nodes.engines[0], to: writer)
            let addedAt = try #require(added.version)
            // After round 0 node 1 has written, so its copy may be followed rather than cold.
            #expect(try await nodes.waitFor(node: 1, toKnow: addedAt))
            let moved = await SharedStoreEngineTests.submit(
                [
                    [
                        "type": "change", "uuid": .string(shape.wireString), "clsName": "Shape",
                        "properties": ["x": .number(JSONNumber(round + 2))],
                    ]
                ],
                on: nodes.engines[1], to: try nodes.handle(1))
            #expect(moved.version == addedAt + 1, "round \(round): \(moved)")
            // Node 0 hears of it: followed if its own write was recent, else noted (cold) and
            // caught up by its next write, which then is judged at the store's head too.
            #expect(try await nodes.waitFor(node: 0, toKnow: addedAt + 1))
        }
    }

    @Test("a cold copy more than a snapshot interval behind reloads from the store's snapshot")
    func aFarBehindCopyReloads() async throws {
        let nodes = try await Nodes(snapshotInterval: 10)
        defer { nodes.close() }
        let last = try await nodes.renameOnWriter(35)
        #expect(try await nodes.waitForAnnouncement(of: last))
        let cold = try nodes.handle(1)
        let current = try #require(await nodes.engines[1].current(cold))
        #expect(current !== cold, "reloaded as a new copy, not replayed")
        #expect(current.version == last)
        #expect(current.encodedState().json == (try nodes.handle(0)).encodedState().json)
        #expect(nodes.engines[1].handle(named: nodes.scope) === current)
    }

    @Test("a copy with a subscriber on its node is followed as versions come")
    func aFollowedCopyKeepsUp() async throws {
        let nodes = try await Nodes()
        defer { nodes.close() }
        let recorder = Recorder()
        nodes.engines[1].subscribe(recorder, to: try nodes.handle(1), from: .fresh)
        #expect(await recorder.waitFor(count: 1, timeout: .seconds(20)))
        let last = try await nodes.renameOnWriter(4)
        let followed = try nodes.handle(1)
        #expect(await waitUntil(timeout: .seconds(20)) { followed.version == last })
        #expect(!followed.lagsStore)
    }
}
