import BenchSupport
import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import TestSupport
import Testing

/// Three typed clients make 300 random local changes each (about one in ten invalid) against the
/// real gateway while the test kills and restarts it twice, cuts event streams, fails requests and
/// loses answers the server already acted on. At the end: no change set twice, every valid change
/// accounted for, every invalid one rolled back and reported, every view equal to the server's.
/// The seed is printed; `JETSTREAM_CONVERGENCE_SEED=<n>` replays its choices (not its timing).
/// The same scenario runs once more, shorter, through a lossy link (`LossyLink`: latency, jitter
/// and connections reset at random between the clients and the server).
@Suite("Convergence under faults")
@MainActor
struct ConvergenceTests {
    static let clients = 3
    static let changesPerClient = 300

    /// What the test did to one client, to check against what it reported.
    struct Ledger {
        var invalid = 0
        var added: [UUID] = []
    }

    @Test(
        "3 clients × 300 random changes through two kills, cut streams and lost answers converge exactly",
        .timeLimit(.minutes(2)))
    func convergenceUnderFaults() async throws {
        let seed = Self.seed(for: "convergence under faults")
        try await LiveHarness.run { live in
            try await Self.converge(live, seed: seed, changesPerClient: Self.changesPerClient)
        }
    }

    /// The same, fewer changes, with a lossy network between the clients and the server on top:
    /// every byte 5–15 ms late each way, and half the connections (event streams, POSTs, the
    /// first fetch) reset within a second of opening, at most 20 in all so that the run ends.
    /// The proxy's counts prove the drops happened. `--header-timeout 2`: a POST whose body never
    /// comes (see ``checkHistory``) is answered 408 after 2 s instead of 10.
    @Test(
        "3 clients × 100 random changes through a lossy link (latency, jitter, dropped connections), two kills, cut streams and lost answers converge exactly",
        .timeLimit(.minutes(2)))
    func convergenceThroughALossyLink() async throws {
        let seed = Self.seed(for: "convergence through a lossy link")
        try await LiveHarness.run(["--header-timeout", "2"]) { live in
            let link = try await LossyLink.start(
                upstreamPort: live.gateway.port,
                faults: .init(
                    latency: .milliseconds(10), jitter: .milliseconds(5), dropProbability: 0.5,
                    dropWithin: .seconds(1), maxDrops: 20, seed: seed))
            do {
                try await Self.converge(live, seed: seed, changesPerClient: 100, through: link.url)
            } catch {
                let stats = try? await link.stop()
                print("convergence through a lossy link: failed; the link: \(stats?.description ?? "?")")
                throw error
            }
            let stats = try await link.stop()
            print("convergence through a lossy link: seed \(seed), the link: \(stats)")
            #expect(stats.dropped > 0, "the link dropped no connection: the run proves nothing about drops (\(stats))")
            #expect(stats.bytesUp > 0 && stats.bytesDown > 0, "the clients talked through the link: \(stats)")
        }
    }

    /// A random seed, or `JETSTREAM_CONVERGENCE_SEED`; printed, so that a failure can be replayed.
    static func seed(for name: String) -> UInt64 {
        let seed =
            ProcessInfo.processInfo.environment["JETSTREAM_CONVERGENCE_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...(1 << 53))
        print("\(name): seed \(seed) (JETSTREAM_CONVERGENCE_SEED=\(seed) replays its choices)")
        return seed
    }

    /// The scenario: three peers on `url` (the gateway by default) make `changesPerClient` random
    /// changes each, interleaved, while the gateway is killed and restarted twice, streams are cut
    /// and requests fail or lose their answers; then every peer must converge to the server's
    /// state and the history must account for every change exactly once (``checkHistory``).
    static func converge(
        _ live: LiveHarness, seed: UInt64, changesPerClient: Int, through url: URL? = nil
    ) async throws {
        var random = SplitMix(seed: seed)
        let started = ContinuousClock.now
        try await live.seed(labels: ["s0", "s1", "s2"])
        var peers: [Peer] = []
        for index in 0..<Self.clients { peers.append(try await openPeer(live, clientID: "c\(index)", through: url)) }
        try await live.waitUntilConverged(peers)
        var ledgers = Array(repeating: Ledger(), count: Self.clients)

        let total = Self.clients * changesPerClient
        // Each client makes exactly its share, interleaved at random.
        let schedule = (0..<total).map { $0 % Self.clients }.shuffled(using: &random)
        var kills = [Int.random(in: total / 6..<total / 3, using: &random)]
        kills.append(Int.random(in: total / 2..<total * 3 / 4, using: &random))
        var restartAt: ContinuousClock.Instant?
        var cuts = 0
        var faults = 0
        for step in 0..<total {
            if kills.contains(step) {
                if restartAt != nil { try await live.gateway.restart() }
                live.gateway.kill()
                restartAt = .now + .milliseconds(Int.random(in: 300...900, using: &random))
            }
            if let at = restartAt, ContinuousClock.now >= at {
                try await live.gateway.restart()
                restartAt = nil
            }
            if Int.random(in: 0..<60, using: &random) == 0 {
                peers.randomElement(using: &random)!.transport.cutStreams()
                cuts += 1
            }
            let index = schedule[step]
            let peer = peers[index]
            switch Int.random(in: 0..<120, using: &random) {
            case 0:
                peer.transport.loseAnswers(1)
                faults += 1
            case 1:
                peer.transport.failRequests(1)
                faults += 1
            default: break
            }
            Self.change(peer, &ledgers[index], &random)
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...8, using: &random)))
        }
        if restartAt != nil || !live.gateway.isRunning { try await live.gateway.restart() }
        let changesMade = ContinuousClock.now - started
        try await live.waitUntilConverged(peers, within: .seconds(45))

        try await Self.checkHistory(live, peers, ledgers)
        let refused = peers.map(\.serverRejections.count)
        let replayed = peers.map { $0.transport.answers.values.filter { $0.count > 1 }.count }
        let timedOut = peers.map { $0.transport.answers.values.joined().filter { $0 == 408 }.count }
        print(
            "convergence: seed \(seed), \(try await live.serverState().version) versions, "
                + "invalid \(ledgers.map(\.invalid)), refused by the server \(refused), \(cuts) stream cuts, "
                + "\(faults) request faults, keys sent again \(replayed), 408 (body never sent) \(timedOut), "
                + "2 kills; changes made in \(changesMade), converged and checked after \(ContinuousClock.now - started)"
        )
    }

    /// A peer on `url`. Its first fetch is tried again a few times: on a lossy link its
    /// connection may be dropped, and an app would try again too (a direct link never fails).
    static func openPeer(_ live: LiveHarness, clientID: String, through url: URL?) async throws -> Peer {
        var attempt = 1
        while true {
            do {
                return try await live.peer(clientID: clientID, through: url)
            } catch {
                guard url != nil, attempt < 5 else { throw error }
                print("convergence: \(clientID)'s fetch failed (\(error)), attempt \(attempt); trying again")
                attempt += 1
            }
        }
    }

    /// One random local change of `peer`'s canvas, as one change set: add, move, relabel, reorder,
    /// remove; one in ten invalid (a negative width or a 300-character label).
    static func change(_ peer: Peer, _ ledger: inout Ledger, _ random: inout SplitMix) {
        let canvas = peer.canvas
        let shapes = canvas.shapes
        let roll = Int.random(in: 0..<100, using: &random)
        func coordinate() -> Float { Float(Int.random(in: -500...500, using: &random)) }
        peer.scope.modify {
            if roll < 10 {
                ledger.invalid += 1
                if let shape = shapes.randomElement(using: &random), Bool.random(using: &random) {
                    if Bool.random(using: &random) {
                        shape.width = -1
                    } else {
                        shape.label = String(repeating: "y", count: 300)
                    }
                } else {
                    let shape = Shape()
                    shape.height = -coordinate().magnitude - 1
                    canvas.shapes.append(shape)
                }
            } else if roll < 35 || shapes.isEmpty {
                let shape = Shape()
                shape.x = coordinate()
                shape.y = coordinate()
                shape.label = "\(peer.sync.version)-\(Int.random(in: 0..<1000, using: &random))"
                shape.kind = Bool.random(using: &random) ? .rect : .oval
                canvas.shapes.insert(shape, at: Int.random(in: 0...shapes.count, using: &random))
                ledger.added.append(shape.uuid)
            } else if roll < 70 {
                let shape = shapes.randomElement(using: &random)!
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    shape.x = coordinate()
                    shape.y = coordinate()
                case 1: shape.label = "edited \(Int.random(in: 0..<1000, using: &random))"
                default: shape.color = Color(rgba: UInt32.random(in: 0...UInt32.max, using: &random))
                }
            } else if roll < 85 {
                var order = shapes
                let moved = order.remove(at: Int.random(in: 0..<order.count, using: &random))
                order.insert(moved, at: Int.random(in: 0...order.count, using: &random))
                canvas.shapes = order
            } else {
                canvas.shapes.remove(at: Int.random(in: 0..<shapes.count, using: &random))
            }
        }
        if roll < 10 {
            // Rolled back before `modify` returned: nothing invalid is left on the canvas.
            #expect(
                canvas.shapes.allSatisfy { $0.width >= 0 && $0.height >= 0 && $0.label.count <= 200 },
                "an invalid change stayed on the canvas")
        }
    }

    /// The server's history against what the clients sent and reported.
    static func checkHistory(_ live: LiveHarness, _ peers: [Peer], _ ledgers: [Ledger]) async throws {
        let state = try await live.serverState()
        let history = try await live.api.changeSets(of: live.scopeName)
        let versions = history.compactMap { $0["version"]?.number?.int64Value }.map(Int.init)
        #expect(versions == Array(1...state.version), "the whole history, in order, without holes")
        let keys = history.compactMap { $0["idempotencyKey"]?.string }
        let counted = Dictionary(keys.map { ($0, 1) }, uniquingKeysWith: +)
        let twice = counted.filter { $0.value > 1 }
        #expect(twice.isEmpty, "change sets applied twice: \(twice)")
        let removed = Set(
            history.flatMap { $0["removed"]?.array ?? [] }.compactMap { $0.string.flatMap(UUID.init(wireString:)) })

        for (index, peer) in peers.enumerated() {
            let prefix = "c\(index):"
            // Every key the server accepted (its answer said 200, delivered or lost) is in the
            // history exactly once; one it refused is not in it. A 408 is no outcome: the HTTP
            // layer answers it before routing when a body did not arrive, so the set was neither
            // applied nor refused by that request (URLSession on Linux does that after a
            // connection reset: libcurl retries the POST on a new connection and sends only its
            // head), and the client sends the set again.
            for (key, statuses) in peer.transport.answers {
                let outcomes = statuses.filter { $0 != 408 }
                if outcomes.contains(200) {
                    #expect(
                        counted[key] == 1, "\(key) accepted (\(statuses)) but \(counted[key] ?? 0) times in history")
                } else if !outcomes.isEmpty {
                    #expect(counted[key] == nil, "\(key) refused (\(statuses)) but in the history")
                }
                #expect(Set(outcomes).count <= 1, "\(key): one outcome, replayed on every retry: \(statuses)")
            }
            // Every key of this client in the history is one it sent (an answer lost to a kill
            // leaves no status: the stream confirmed the set before it was sent again).
            let unknown = keys.filter { $0.hasPrefix(prefix) && !peer.transport.sentKeys.contains($0) }
            #expect(unknown.isEmpty, "keys in the history this client never sent: \(unknown)")
            // Every invalid change was rolled back and reported locally (and nothing else was).
            #expect(peer.localRejections.count == ledgers[index].invalid, "client \(index)")
            #expect(peer.localRejections.allSatisfy { !$0.reasons.isEmpty && $0.status == 422 })
            // The server refuses only what a race explains: an object another client removed,
            // or an anchor or element that left meanwhile. Anything else the client should have
            // caught itself.
            let kinds = Set(peer.serverRejections.flatMap { $0.replies.compactMap { $0.error?.kind } })
            #expect(kinds.isSubset(of: [.unknownObject, .missingReference]), "client \(index): \(kinds)")
            #expect(peer.serverRejections.allSatisfy { $0.status == 422 })
            for rejection in peer.serverRejections {
                #expect(rejection.replies.count == rejection.fragments.count, "per-fragment reasons: \(rejection)")
                #expect(rejection.replies.contains { $0.error != nil }, "\(rejection)")
            }
            // Every shape the client added is on the canvas, or was removed, or its set was refused.
            let refusedAdds = Set(
                peer.serverRejections.flatMap(\.fragments).filter { $0.type == .add }.map(\.uuid))
            for uuid in ledgers[index].added {
                #expect(
                    state.contains(uuid) || removed.contains(uuid) || refusedAdds.contains(uuid),
                    "client \(index)'s shape \(uuid) is lost")
            }
        }
    }
}
