import CanvasModel
import Foundation
import Jetstream
@_spi(Benchmarks) import JetstreamClient
import JetstreamModel

/// One client of the `actor` section and what its actor spent per `changeset` event.
struct ActorClientResult {
    let preparesOffActor: Bool
    var fetchMs = 0.0
    /// `EventTiming.events`, and its samples in µs.
    var events = 0
    var samples: [Double] = []
    var totalMs = 0.0
    var fires = 0
    var duplicateFires = 0
    var version = 0

    var meanMicros: Double { events > 0 ? totalMs * 1e3 / Double(events) : 0 }
    var p50Micros: Double { Measure.percentile(samples, 0.5) }
    var p99Micros: Double { Measure.percentile(samples, 0.99) }
    var maxMicros: Double { samples.max() ?? 0 }
}

struct ActorResult {
    var events = 0
    var writers = 0
    var postSeconds = 0.0
    var firstVersion = 0
    var lastVersion = 0
    var expectedFires = 0
    var onActor = ActorClientResult(preparesOffActor: false)
    var offActor = ActorClientResult(preparesOffActor: true)
    /// Shapes whose `x` differs between the two clients, or from the value of its last POST.
    var stateMismatches = 0
    var reconnects = 0
    var failures: [String] = []

    /// How many times longer the actor took per event with parsing on it (mean, p50).
    var meanRatio: Double { offActor.meanMicros > 0 ? onActor.meanMicros / offActor.meanMicros : 0 }
    var p50Ratio: Double { offActor.p50Micros > 0 ? onActor.p50Micros / offActor.p50Micros : 0 }
}

/// The observers' actor's time per server event, before and after `changeset` events were read
/// and applied to the confirmed state off it: two clients of the seeded scope on the main actor
/// (separate `Client`s, so separate streams), one with `preparesEventsOffActor` off (the previous
/// path: fragments decoded, validated and applied on the actor) and one with it on, each with the
/// stream section's observers, get the same `events` change sets from a writer; their
/// `ScopeSync.eventTiming` says what each actor spent per event.
@MainActor
func measureActorTime(
    _ http: GatewayHTTP, url: URL, seeded: SeededScope, observed: [Int], events: Int, writers: Int
) async throws -> ActorResult {
    var result = ActorResult(events: events, writers: writers)
    let token = ObserverToken()
    var syncs: [ScopeSync] = []
    var canvases: [Canvas] = []
    var counters: [FireCounter] = []
    let reconnects = FireCounter()
    defer { withExtendedLifetime(token) {} }
    for offActor in [false, true] {
        var configuration = Client.Configuration()
        configuration.preparesEventsOffActor = offActor
        let client = Client(url: url, configuration: configuration)
        let canvas = Canvas()
        let started = ContinuousClock.now
        let sync = try await client.fetch(Scope(name: seeded.name, root: canvas))
        let fetchMs = Measure.seconds(.now - started) * 1e3
        if offActor { result.offActor.fetchMs = fetchMs } else { result.onActor.fetchMs = fetchMs }
        syncs.append(sync)
        canvases.append(canvas)
        try await waitUntilLive(sync, offActor ? "actor (off)" : "actor (on)")
        sync.onStatusChange { status in if case .reconnecting = status { reconnects.saw(0) } }
        let shapes = canvas.shapes
        guard shapes.count == seeded.shapeUUIDs.count else { throw BenchError("fetched \(shapes.count) shapes") }
        let counter = FireCounter()
        for index in observed {
            let shape = shapes[index]
            shape.observeChange(token, keys: ["x"]) { [unowned shape, counter] in counter.saw(Int(shape.x)) }
        }
        counters.append(counter)
    }
    do {
        try await drive(
            &result, http, seeded: seeded, observed: observed, syncs: syncs, canvases: canvases, counters: counters)
    } catch {
        for sync in syncs { await sync.stop() }
        throw error
    }
    for sync in syncs { await sync.stop() }
    result.reconnects = reconnects.fires
    return result
}

/// The writer, the wait until both clients reached its last version, and the checks.
@MainActor
private func drive(
    _ result: inout ActorResult, _ http: GatewayHTTP, seeded: SeededScope, observed: [Int], syncs: [ScopeSync],
    canvases: [Canvas], counters: [FireCounter]
) async throws {
    let (events, writers) = (result.events, result.writers)
    result.firstVersion = syncs[0].version

    // One `change` of one shape's x per set, values used nowhere else; the last on an observed shape.
    let base = 2_000_000
    var plan = EventPlan.shapes(count: events, observed: observed, objects: seeded.shapeUUIDs.count, seed: 17)
    plan[events - 1] = observed[0]
    let bodies: [[UInt8]] = plan.enumerated().map { offset, index in
        JSONValue.object(["fragments": [InProcessApply.fragment(seeded.shapeUUIDs[index], x: base + offset).jsonValue]])
            .encoded()
    }
    progress("actor: \(events) change sets, \(writers) in flight, to two clients (parsing on / off the actor)")
    let outcome = await Task.detached {
        await RemoteWriter.run(http, scope: seeded.name, bodies: bodies, concurrency: writers)
    }.value
    result.postSeconds = outcome.seconds
    result.failures += outcome.failures
    result.lastVersion = outcome.versions.max() ?? 0
    let deadline = ContinuousClock.now + .seconds(120)
    while syncs.contains(where: { $0.version < result.lastVersion }) && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }

    var last: [Int: (version: Int, value: Int)] = [:]
    var expected: Set<Int> = []
    let observedSet = Set(observed)
    for (offset, index) in plan.enumerated() where outcome.versions[offset] > 0 {
        if observedSet.contains(index) { expected.insert(base + offset) }
        if (last[index]?.version ?? -1) < outcome.versions[offset] {
            last[index] = (outcome.versions[offset], base + offset)
        }
    }
    result.expectedFires = expected.count
    for (position, sync) in syncs.enumerated() {
        let timing = sync.eventTiming
        var client = position == 0 ? result.onActor : result.offActor
        client.events = timing.events
        client.samples = timing.samples.map { Measure.seconds($0) * 1e6 }
        client.totalMs = Measure.seconds(timing.total) * 1e3
        client.fires = counters[position].fires
        client.duplicateFires = counters[position].seen.values.reduce(0) { $0 + max(0, $1 - 1) }
        client.version = sync.version
        if position == 0 { result.onActor = client } else { result.offActor = client }
        let name = position == 0 ? "on the actor" : "off the actor"
        if client.version != result.lastVersion {
            result.failures.append("\(name): version \(client.version), the server's \(result.lastVersion)")
        }
        if client.events != result.lastVersion - result.firstVersion {
            result.failures.append(
                "\(name): \(client.events) events timed for versions \(result.firstVersion + 1)…\(result.lastVersion)")
        }
        if client.fires != expected.count || client.duplicateFires > 0 || Set(counters[position].seen.keys) != expected
        {
            result.failures.append(
                "\(name): \(client.fires) observer fires (\(client.duplicateFires) duplicate), expected \(expected.count)"
            )
        }
    }
    let (first, second) = (canvases[0].shapes, canvases[1].shapes)
    result.stateMismatches =
        (0..<seeded.shapeUUIDs.count).filter { index in
            first[index].x != second[index].x || last[index].map { Float($0.value) != first[index].x } ?? false
        }.count
}
