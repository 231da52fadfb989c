import Foundation
import JetstreamModel
import Logging
import PostgresStore
import Store
import TestSupport
import Testing

@testable import ScopeEngine

/// Two engines — two gateway nodes — on one PostgreSQL database of the test's own cluster: what one
/// commits reaches the other's subscribers, version races between them resolve by retrying, and
/// deletions and idempotency keys are seen on both.
@Suite struct SharedStoreEngineTests {
    /// Two nodes on a fresh database; both follow the store.
    final class TwoNodes: Sendable {
        let database: String
        let stores: [PostgresStore]
        let engines: [ScopeEngine]

        init(conflictRetries: Int = 8) async throws {
            let cluster = try await PostgresTestCluster.shared()
            let database = try await cluster.createDatabase()
            var storeConfiguration = PostgresStore.Configuration()
            storeConfiguration.pollInterval = .milliseconds(500)
            storeConfiguration.readerConnections = 2
            var configuration = ScopeEngineConfiguration(schema: .demo)
            configuration.conflictRetries = conflictRetries
            let logger = Logger(label: "test")
            let stores = try (0..<2).map { _ in
                try PostgresStore(url: cluster.url(database: database), configuration: storeConfiguration)
            }
            self.database = database
            self.stores = stores
            engines = stores.map { ScopeEngine(configuration: configuration, store: $0, logger: logger) }
            for engine in engines { #expect(engine.followSharedStore()) }
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

    static func submit(_ fragments: [JSONValue], on engine: ScopeEngine, to handle: ScopeHandle) async -> SubmitOutcome
    {
        await withCheckedContinuation { continuation in
            engine.submit(ChangeSet(json: fragments), to: handle) { continuation.resume(returning: $0) }
        }
    }

    @Test("a change set committed on one node reaches the other node's subscribers, byte for byte as logged")
    func commitsReachTheOtherNode() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-shared-1")
        let recorder = Recorder()
        nodes.engines[1].subscribe(recorder, to: handles[1], from: .after(0))
        for index in 0..<5 {
            let outcome = await Self.submit(
                EngineFixture.rename(handles[0], to: "name \(index)"), on: nodes.engines[0], to: handles[0])
            #expect(outcome.version == index + 1)
        }
        #expect(await waitUntil(timeout: .seconds(20)) { recorder.changesetVersions.count == 5 })
        #expect(recorder.changesetVersions == [1, 2, 3, 4, 5])
        let logged = try await nodes.stores[1].changes(scope: "canvas-shared-1", after: 0, limit: 10).records
        let received = recorder.events.filter { $0.kind == .changeset }
        #expect(received.map(\.payload) == logged.map(\.payload))
        #expect(handles[1].version == 5)
        #expect(handles[1].committedState.root["name"] == .string("name 4"))
    }

    @Test("writers on both nodes race on one scope: every write lands once, versions stay contiguous")
    func versionRacesResolve() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-shared-race")
        let perNode = 40
        let outcomes = await withTaskGroup(of: SubmitOutcome.self) { group in
            for node in 0..<2 {
                for index in 0..<perNode {
                    group.addTask {
                        await Self.submit(
                            EngineFixture.rename(handles[node], to: "node \(node) write \(index)"),
                            on: nodes.engines[node], to: handles[node])
                    }
                }
            }
            var all: [SubmitOutcome] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let versions = outcomes.compactMap(\.version).sorted()
        let refused = outcomes.filter { $0.version == nil }
        // A write may exhaust its retries (503) under this much contention, but must then be absent.
        #expect(refused.allSatisfy { if case .rejected(.store) = $0 { true } else { false } })
        #expect(refused.count <= outcomes.count / 10)
        #expect(versions == Array(1...versions.count))
        let log = try await nodes.stores[0].changes(scope: "canvas-shared-race", after: 0, limit: 1000)
        #expect(log.records.map(\.version) == versions.map(Int64.init))
        // Both nodes converge on the log, as a reader finds each copy: a node that stopped writing
        // 2 s before the other (`coldAfter`; under load it happens) leaves its copy behind, a cold
        // copy brought up by the next read (`current`), not by the notices.
        var current: [ScopeHandle?] = [nil, nil]
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            current = [await nodes.engines[0].current(handles[0]), await nodes.engines[1].current(handles[1])]
            if current.allSatisfy({ $0?.version == versions.count }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(current.map { $0?.version } == [versions.count, versions.count])
        #expect(current[0]?.committedState.root["name"] == current[1]?.committedState.root["name"])
    }

    @Test("a scope deleted on one node ends the other node's subscribers with deleted")
    func deletionsReachTheOtherNode() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-shared-gone")
        _ = await Self.submit(EngineFixture.rename(handles[0], to: "last"), on: nodes.engines[0], to: handles[0])
        let recorder = Recorder()
        nodes.engines[1].subscribe(recorder, to: handles[1], from: .after(0))
        try await nodes.engines[0].delete(name: "canvas-shared-gone")
        #expect(await recorder.waitForEnd(timeout: .seconds(20)))
        #expect(recorder.events.last?.kind == .deleted)
        #expect(nodes.engines[1].handle(named: "canvas-shared-gone") == nil)
    }

    @Test("a copy of a scope read from the store before its deletion is never loaded again after it")
    func aStaleCopyIsNotResurrected() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        _ = try await nodes.createCanvas("canvas-shared-stale")
        // What a follower round may have read just before the delete went through.
        let stale = try #require(try await nodes.stores[0].recoverScope(named: "canvas-shared-stale"))
        try await nodes.engines[0].delete(name: "canvas-shared-stale")
        #expect(try nodes.engines[0].adoptIfAbsent(stale) == nil)
        #expect(nodes.engines[0].handle(named: "canvas-shared-stale") == nil)
        // A new incarnation of the name continues after the tombstone and is hosted as usual.
        let again = try await nodes.engines[0].create(name: "canvas-shared-stale", rootClassName: "Canvas")
        #expect(again.version > stale.info.version)
    }

    @Test("a copy restored while the scope is being deleted is dropped when it would be hosted, not brought back")
    func aCopyRestoredDuringTheDeleteIsDropped() async throws {
        // The follower's load of a scope runs concurrently with requests: it may read the store
        // and restore the copy before a DELETE, and only host it after the DELETE has answered.
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let engine = nodes.engines[0]
        _ = try await nodes.createCanvas("canvas-shared-race")
        let stale = try #require(try await nodes.stores[0].recoverScope(named: "canvas-shared-race"))
        let restored = try engine.restore(stale)
        let reloaded = try engine.restore(stale)
        try await engine.delete(name: "canvas-shared-race")
        #expect(engine.host(restored, readAt: stale.info.version, replacing: false) == nil)
        #expect(engine.host(reloaded, readAt: stale.info.version, replacing: true) == nil)
        #expect(engine.handle(named: "canvas-shared-race") == nil)
        do {
            try await engine.delete(name: "canvas-shared-race")
            Issue.record("a second delete of the scope succeeded")
        } catch {
            guard case .scopeNotFound = error else { throw error }
        }
        // A copy of a new incarnation is hosted as usual.
        let again = try await engine.create(name: "canvas-shared-race", rootClassName: "Canvas")
        let fresh = try #require(try await nodes.stores[0].recoverScope(named: "canvas-shared-race"))
        let hosted = engine.host(try engine.restore(fresh), readAt: fresh.info.version, replacing: true)
        #expect(hosted != nil && hosted !== again)
        #expect(engine.handle(named: "canvas-shared-race") === hosted)
    }

    @Test("a deletion and a re-creation merged into one notice replace the scope a node hosts")
    func aDeletionAndRecreationInOneNoticeReplaceTheScope() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        _ = try await nodes.createCanvas("canvas-shared-again")
        // A third node that is not following: its notices are given by hand, as one round sees
        // them when both arrive while the previous round runs.
        var configuration = PostgresStore.Configuration()
        configuration.readerConnections = 1
        let store = try PostgresStore(
            url: try await PostgresTestCluster.shared().url(database: nodes.database), configuration: configuration)
        defer { store.close() }
        let third = ScopeEngine(
            configuration: ScopeEngineConfiguration(schema: .demo), store: store, logger: Logger(label: "test"))
        try await third.recover()
        let old = try #require(third.handle(named: "canvas-shared-again"))
        let recorder = Recorder()
        third.subscribe(recorder, to: old, from: .after(0))
        try await nodes.engines[0].delete(name: "canvas-shared-again")
        let again = try await nodes.engines[0].create(name: "canvas-shared-again", rootClassName: "Canvas")
        ScopeFollower(engine: third).enqueue(
            .changed([
                ScopeVersion(name: "canvas-shared-again", version: 0, deleted: true),
                ScopeVersion(name: "canvas-shared-again", version: 0),
            ]))
        #expect(await waitUntil(timeout: .seconds(20)) { third.handle(named: "canvas-shared-again") !== old })
        #expect(third.handle(named: "canvas-shared-again")?.version == again.version)
        #expect(await recorder.waitForEnd(timeout: .seconds(20)))
    }

    @Test("an idempotency key decided on one node replays on the other")
    func keysReplayOnTheOtherNode() async throws {
        let nodes = try await TwoNodes()
        defer { nodes.close() }
        let handles = try await nodes.createCanvas("canvas-shared-key")
        let fragments = EngineFixture.rename(handles[0], to: "once")
        let key = IdempotencyKey(key: "k-1", body: EngineFixture.body(fragments))
        var outcomes: [SubmitOutcome] = []
        for node in 0..<2 {
            outcomes.append(
                await withCheckedContinuation { continuation in
                    nodes.engines[node].submitOnce(ChangeSet(json: fragments), to: handles[node], idempotency: key) {
                        continuation.resume(returning: $0)
                    }
                })
        }
        #expect(outcomes[0].version == 1)
        guard case .replayed(let record) = outcomes[1] else {
            Issue.record("expected a replay on the other node, got \(outcomes[1])")
            return
        }
        #expect(record.version == 1)
        #expect(try await nodes.stores[0].changes(scope: "canvas-shared-key", after: 0, limit: 10).records.count == 1)
    }
}
