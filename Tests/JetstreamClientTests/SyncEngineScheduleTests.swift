import BenchSupport
import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// Three `SyncEngine`s and a fake server (the model core) under seeded random schedules of local
/// sets, sends, lost answers, answers and events. After every step the view is what
/// docs/sync-protocol.md defines (confirmed with the pending sets that still apply re-applied in
/// order), and the updates rebuild it exactly from the previous view — what the typed scope
/// relies on. At the end every
/// engine equals the server and no key was applied twice. (Across the 20 seeds the schedules
/// include sets the schema refuses and sets the server refuses after a race.)
@Suite("SyncEngine schedules")
struct SyncEngineScheduleTests {
    typealias F = EngineFixtures

    /// One engine, how far it has read the server's events, its mirror (the view rebuilt from the
    /// updates only, as the typed scope is) and its set in flight with the server's answer.
    struct Client {
        var engine: SyncEngine
        var read = 0
        var mirror: ScopeState
        var flying: (key: String, outcome: FakeServer.Outcome)?

        init(id: String, server: FakeServer) {
            engine = SyncEngine(state: server.state, schema: F.schema, clientID: id)
            mirror = server.state
        }

        /// Applies `update` to the mirror and checks both invariants.
        mutating func check(_ update: ViewUpdate, _ label: String) throws {
            mirror = try F.applying(update, to: mirror)
            #expect(F.content(mirror) == F.content(engine.view), "the updates rebuild the view (\(label))")
            var rebuilt = engine.confirmed
            for set in engine.pending {
                if case .accepted(let applied) = rebuilt.applying(set.fragments, schema: F.schema, limits: .unlimited) {
                    rebuilt = applied.state
                }
            }
            #expect(F.content(rebuilt) == F.content(engine.view), "view = confirmed + pending (\(label))")
        }
    }

    /// A random local edit of `view`: add (anywhere), move, relabel, remove; about one in ten invalid.
    static func edit(_ view: ScopeState, _ random: inout SplitMix, fresh: () -> UUID) -> [SyncFragment] {
        let shapes = F.order(view)
        let kind = Int.random(in: 0..<10, using: &random)
        if kind < 4 || shapes.isEmpty {
            return F.add(
                fresh(), ["x": .number(JSONNumber(Int.random(in: 0..<100, using: &random)))],
                before: Bool.random(using: &random) ? nil : shapes.randomElement(using: &random))
        }
        let target = shapes.randomElement(using: &random)!
        switch kind {
        case 4, 5, 6:
            return F.set(
                target,
                [
                    "x": .number(JSONNumber(Int.random(in: 0..<100, using: &random))),
                    "label": .string("l\(Int.random(in: 0..<9, using: &random))"),
                ])
        case 7, 8: return F.remove(target)
        default: return F.set(target, ["width": -1])
        }
    }

    @Test("three engines fed the same events end equal to the server", arguments: 1...20)
    func schedules(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        var next = 100
        let fresh = {
            next += 1
            return F.uuid(next)
        }
        var server = FakeServer(state: F.canvas(version: 0, [(F.uuid(1), ["x": 1]), (F.uuid(2), ["x": 2])]))
        var clients = ["a", "b", "c"].map { Client(id: "\($0)\(seed)", server: server) }

        func step(_ index: Int, _ action: Int) throws {
            var client = clients[index]
            defer { clients[index] = client }
            switch action {
            case 0:
                switch client.engine.local(Self.edit(client.engine.view, &random, fresh: fresh)) {
                case .success:
                    // The typed scope already shows a local change: the mirror takes the view.
                    client.mirror = client.engine.view
                case .failure:
                    break  // refused by the schema: nothing changed, nothing to check
                }
            case 1:
                if let flying = client.flying {
                    client.flying = nil
                    // The answer is lost one time in five: the set is sent again with its key.
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        client.engine.retry(key: flying.key)
                        return
                    }
                    switch flying.outcome {
                    case .accepted(let version):
                        try client.check(client.engine.accepted(key: flying.key, version: version), "accepted")
                    case .rejected:
                        try client.check(client.engine.rejected(key: flying.key), "rejected")
                    }
                } else if let set = client.engine.nextToSend() {
                    client.flying = (set.key, server.post(set.fragments, key: set.key))
                }
            default:
                guard client.read < server.events.count else { return }
                let event = server.events[client.read]
                client.read += 1
                switch client.engine.event(
                    version: event.version, fragments: event.fragments, removed: event.removed,
                    idempotencyKey: event.idempotencyKey)
                {
                case .applied(let update): try client.check(update, "event \(event.version)")
                case let other: Issue.record("seed \(seed): event \(event.version) gave \(other)")
                }
            }
        }

        for _ in 0..<150 {
            try step(Int.random(in: 0..<3, using: &random), Int.random(in: 0..<4, using: &random))
        }
        // Drain (bounded): every set answered, every event read.
        for _ in 0..<10_000 {
            let busy = clients.indices.filter {
                !clients[$0].engine.pending.isEmpty || clients[$0].read < server.events.count
            }
            if busy.isEmpty { break }
            for index in busy {
                try step(index, 1)
                try step(index, 2)
            }
        }
        for client in clients {
            #expect(client.engine.pending.isEmpty, "seed \(seed): \(client.engine.clientID) still has pending sets")
            #expect(client.engine.version == server.state.version, "seed \(seed)")
            #expect(F.content(client.engine.view) == F.content(server.state), "seed \(seed): diverged")
        }
        let keys = server.events.compactMap(\.idempotencyKey)
        #expect(Set(keys).count == keys.count, "seed \(seed): a key applied twice")
        #expect(server.events.count > 10, "seed \(seed): the schedule wrote something")
    }
}
