import CanvasModel
import Foundation
import Jetstream
import JetstreamModel
import ServerSentEvents

/// Counts what observers see: how often each `x` value fired (values are unique per event).
@MainActor
final class FireCounter {
    var seen: [Int: Int] = [:]
    var fires = 0

    func saw(_ value: Int) {
        fires += 1
        seen[value, default: 0] += 1
    }

    func reset() {
        seen = [:]
        fires = 0
    }
}

/// Keeps observations alive (the framework holds observers weakly).
final class ObserverToken {}

/// The remote apply in process: a typed scope holding the server's state, fed the events
/// directly — the framework's public `Scope.applySyncFragments`, and the client's per-event work
/// with public API (SSE parse, JSON parse, fragment decode, the model core's apply of the
/// confirmed state as `SyncEngine.event` does, `applySyncFragments`, `adoptState`).
@MainActor
struct InProcessApply {
    let scope: Scope
    let schema: Schema
    var confirmed: ScopeState
    let shapes: [Shape]
    let counter = FireCounter()
    let token = ObserverToken()
    /// Time to load the state into typed objects (`applyFullState`).
    let loadSeconds: Double

    init(state: ScopeState, schema: Schema, name: String) throws {
        let canvas = Canvas()
        scope = Scope(name: name, root: canvas, schema: schema)
        self.schema = schema
        confirmed = state
        let fragments = state.exportFragments()
        let started = ContinuousClock.now
        try scope.applyFullState(fragments, rootUUID: state.rootUUID, version: state.version)
        scope.adoptState(state)
        loadSeconds = Measure.seconds(.now - started)
        shapes = canvas.shapes
    }

    func observe(_ indices: [Int]) {
        for index in indices {
            let shape = shapes[index]
            shape.observeChange(token, keys: ["x"]) { [unowned shape, counter] in counter.saw(Int(shape.x)) }
        }
    }

    static func fragment(_ shape: UUID, x: Int) -> SyncFragment {
        SyncFragment(type: .change, uuid: shape, clsName: "Shape", properties: ["x": .number(JSONNumber(Double(x)))])
    }

    /// `applySyncFragments` of one-fragment change sets (`x` of the planned shapes, values from
    /// `firstValue` on). Per-event times in µs.
    func applyFragments(plan: [Int], firstValue: Int) throws -> [Double] {
        let events = plan.enumerated().map { offset, index in
            [Self.fragment(shapes[index].uuid, x: firstValue + offset)]
        }
        var times: [Double] = []
        times.reserveCapacity(events.count)
        let clock = ContinuousClock()
        for fragments in events {
            let start = clock.now
            try scope.applySyncFragments(fragments)
            times.append(Measure.seconds(clock.now - start) * 1e6)
        }
        return times
    }

    /// The client's work per `changeset` event, from the event's bytes as the stream delivers
    /// them (one event per chunk, the worst case for chunking) to observers fired.
    mutating func applyClientEquivalent(plan: [Int], firstValue: Int) throws -> [Double] {
        // The engine's confirmed state is what the scope shows (nothing pending).
        confirmed = try scope.currentState().withVersion(confirmed.version)
        var version = confirmed.version
        let chunks: [[UInt8]] = plan.enumerated().map { offset, index in
            version += 1
            let data: JSONValue = [
                "version": .number(JSONNumber(version)), "idempotencyKey": .string("writer:\(version)"),
                "fragments": [Self.fragment(shapes[index].uuid, x: firstValue + offset).jsonValue], "removed": [],
            ]
            return Array("event: changeset\nid: \(version)\ndata: ".utf8) + data.encoded() + Array("\n\n".utf8)
        }
        var parser = SSEParser(maxLineBytes: 1 << 30)
        var times: [Double] = []
        times.reserveCapacity(chunks.count)
        let clock = ContinuousClock()
        for chunk in chunks {
            let start = clock.now
            try parser.consume(chunk) { event in try apply(event) }
            times.append(Measure.seconds(clock.now - start) * 1e6)
        }
        return times
    }

    private mutating func apply(_ event: ServerSentEvent) throws {
        guard event.type == "changeset" else { return }
        let json = try JSONParser.parse(event.data, options: JSONParser.Options(maxDepth: 64, maxBytes: 1 << 30))
        guard let number = json["version"]?.number?.int64Value, let array = json["fragments"]?.array else {
            throw BenchError("malformed event")
        }
        let fragments = try array.map { element throws(FragmentError) in try SyncFragment(json: element) }
        _ = (json["removed"]?.array ?? []).compactMap { $0.string.flatMap(UUID.init(wireString:)) }
        scope.flush()
        guard case .accepted(let applied) = confirmed.applying(fragments, schema: schema, limits: .unlimited) else {
            throw BenchError("event \(number) rejected")
        }
        confirmed = applied.state.withVersion(Int(number))
        try scope.applySyncFragments(fragments)
        scope.adoptState(confirmed)
    }
}
