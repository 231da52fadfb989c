import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel

/// What the client's storage (`Client(url:storage: .directory(…))`) costs: its size on disk, a
/// start from it with the server up and down, `saved()` per local change, and the replay of sets
/// made offline once the server is reachable again.
struct OfflineResult {
    var objects = 0
    var changes = 0
    /// The first fetch with storage (from the server, then the whole copy written), and its stop.
    var firstFetchMs = 0.0
    var firstStopMs = 0.0
    /// Bytes of the scope's folder after the stop, per file.
    var files: [String: Int] = [:]
    /// `Client.fetch` without storage (the server's state), and with the stored copy, server up or not.
    var serverFetchMs: [Double] = []
    var coldUpMs: [Double] = []
    var coldDownMs: [Double] = []
    /// The status a fetch with the server down returned with.
    var downStatus = ""
    /// µs: a local change then `saved()` (journal write and fsync); the change then `flush()` only.
    var savedMicros: [Double] = []
    var flushMicros: [Double] = []
    var replay = Replay()
    var failures: [String] = []

    struct Replay {
        var sets = 0
        /// `saved()` after the offline changes, and the stop.
        var savedMs = 0.0
        var fetchMs = 0.0
        /// From the call to fetch to nothing pending with the stream live.
        var seconds = 0.0
        var versionBefore = 0
        var versionAfter = 0
        var logged = 0
        var distinctKeys = 0
        var valueMismatches = 0

        var setsPerSecond: Double { seconds > 0 ? Double(sets) / seconds : 0 }
    }

    var storageBytes: Int { files.values.reduce(0, +) }
    var bytesPerObject: Double { objects > 0 ? Double(storageBytes) / Double(objects) : 0 }
}

/// The `offline` section, on a fresh storage directory removed at the end.
@MainActor
func measureOffline(
    _ http: GatewayHTTP, url: URL, seeded: SeededScope, changes: Int, coldStarts: Int
) async throws -> OfflineResult {
    let directory = FileManager.default.temporaryDirectory.appending(path: "clientbench-storage-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    var result = OfflineResult(objects: seeded.shapeUUIDs.count + 1, changes: changes)
    let shapes = seeded.shapeUUIDs.count
    // Nothing listens on port 1: the schema read fails at once, and the stored copy is used.
    let unreachable = URL(string: "http://127.0.0.1:1")!
    func stored(_ url: URL) -> Client { Client(url: url, storage: .directory(directory)) }
    func fetch(_ client: Client) async throws -> (ScopeSync, Canvas, Double) {
        let canvas = Canvas()
        let started = ContinuousClock.now
        let sync = try await client.fetch(Scope(name: seeded.name, root: canvas))
        let milliseconds = Measure.seconds(.now - started) * 1e3
        guard canvas.shapes.count == shapes else {
            await sync.stop()
            throw BenchError("offline: the view has \(canvas.shapes.count) shapes, expected \(shapes)")
        }
        return (sync, canvas, milliseconds)
    }

    progress("offline: storage size")
    var (sync, canvas, milliseconds) = try await fetch(stored(url))
    result.firstFetchMs = milliseconds
    try await waitUntilLive(sync, "stored")
    var started = ContinuousClock.now
    await sync.stop()  // the copy is written whole
    result.firstStopMs = Measure.seconds(.now - started) * 1e3
    result.files = try fileSizes(in: directory)

    progress("offline: \(coldStarts) fetches each without storage, from storage (server up, server down)")
    for _ in 0..<coldStarts {
        (sync, _, milliseconds) = try await fetch(Client(url: url))
        result.serverFetchMs.append(milliseconds)
        await sync.stop()
    }
    for _ in 0..<coldStarts {
        (sync, _, milliseconds) = try await fetch(stored(url))
        result.coldUpMs.append(milliseconds)
        try await waitUntilLive(sync, "stored, server up")
        await sync.stop()
    }
    for _ in 0..<coldStarts {
        (sync, _, milliseconds) = try await fetch(stored(unreachable))
        result.coldDownMs.append(milliseconds)
        result.downStatus = "\(sync.status)"
        // The stream's first try fails at once: the sync says it is reconnecting.
        let deadline = ContinuousClock.now + .seconds(10)
        while !isReconnecting(sync.status) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        if !isReconnecting(sync.status) {
            result.failures.append("a fetch from http://127.0.0.1:1 is \(sync.status) after 10 s, not reconnecting")
        }
        await sync.stop()
    }

    progress("offline: \(changes) local changes with saved(), \(changes) with flush() only")
    (sync, canvas, _) = try await fetch(stored(url))
    try await waitUntilLive(sync, "stored, for saved()")
    let views = canvas.shapes
    do {
        for index in 0..<changes {
            started = ContinuousClock.now
            views[index % shapes].x = Float(4_000_000 + index)
            try await sync.saved()
            result.savedMicros.append(Measure.seconds(.now - started) * 1e6)
            try await waitUntilConfirmed(sync)
        }
        for index in 0..<changes {
            started = ContinuousClock.now
            views[index % shapes].x = Float(4_100_000 + index)
            sync.scope.flush()
            result.flushMicros.append(Measure.seconds(.now - started) * 1e6)
            try await waitUntilConfirmed(sync)
        }
    } catch {
        await sync.stop()
        throw error
    }
    await sync.stop()

    progress("offline: \(changes) change sets made with the server unreachable, then replayed")
    result.replay = try await measureReplay(
        http, name: seeded.name, changes: changes, offline: { try await fetch(stored(unreachable)) },
        online: { try await fetch(stored(url)) }, failures: &result.failures)
    return result
}

/// A stored client on the unreachable URL makes `changes` change sets, saves and stops; then a
/// stored client on the server's URL fetches: the time until it has sent them all and is live.
@MainActor
private func measureReplay(
    _ http: GatewayHTTP, name: String, changes: Int, offline: () async throws -> (ScopeSync, Canvas, Double),
    online: () async throws -> (ScopeSync, Canvas, Double), failures: inout [String]
) async throws -> OfflineResult.Replay {
    var replay = OfflineResult.Replay(sets: changes)
    replay.versionBefore = try await serverVersion(http, name)
    let base = 4_200_000
    var (sync, canvas, _) = try await offline()
    var views = canvas.shapes
    for index in 0..<changes {
        views[index % views.count].x = Float(base + index)
        sync.scope.flush()  // each change its own set
        if sync.pendingCount != index + 1 && failures.count < 10 {
            failures.append("replay: \(sync.pendingCount) pending after \(index + 1) offline changes")
        }
    }
    var started = ContinuousClock.now
    do {
        try await sync.saved()
    } catch {
        await sync.stop()
        throw error
    }
    await sync.stop()
    replay.savedMs = Measure.seconds(.now - started) * 1e3

    started = ContinuousClock.now
    (sync, canvas, replay.fetchMs) = try await online()
    let deadline = ContinuousClock.now + .seconds(300)
    while !(sync.pendingCount == 0 && sync.status == .live) && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(1))
    }
    replay.seconds = Measure.seconds(.now - started)
    let pending = sync.pendingCount
    views = canvas.shapes
    var last: [Int: Int] = [:]
    for index in 0..<changes { last[index % views.count] = base + index }
    replay.valueMismatches = last.filter { index, value in views[index].x != Float(value) }.count
    await sync.stop()
    if pending > 0 { failures.append("replay: \(pending) sets still pending after 300 s") }

    replay.versionAfter = try await serverVersion(http, name)
    let body = try await http.expect(
        200, "GET", "/v1/scopes/\(name)/changesets?since=\(replay.versionBefore)&limit=10000")
    let logged = try JSONParser.parse(body)["changesets"]?.array ?? []
    let keys = logged.compactMap { $0["idempotencyKey"]?.string }
    replay.logged = logged.count
    replay.distinctKeys = Set(keys).count
    if replay.versionAfter != replay.versionBefore + changes || replay.logged != changes
        || replay.distinctKeys != changes || keys.count != changes
    {
        failures.append(
            "replay: the server went \(replay.versionBefore) → \(replay.versionAfter), logging \(replay.logged) sets "
                + "with \(replay.distinctKeys) distinct keys, for \(changes) offline sets")
    }
    if replay.valueMismatches > 0 {
        failures.append("replay: \(replay.valueMismatches) shapes lack their last offline value")
    }
    return replay
}

func isReconnecting(_ status: ScopeSync.Status) -> Bool {
    if case .reconnecting = status { return true }
    return false
}

/// Waits (at most 10 s) until the server confirmed every local set.
@MainActor
func waitUntilConfirmed(_ sync: ScopeSync) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while sync.pendingCount > 0 {
        guard ContinuousClock.now < deadline else {
            throw BenchError("\(sync.pendingCount) sets unconfirmed after 10 s")
        }
        try await Task.sleep(for: .microseconds(200))
    }
}

/// The scope's version on the server.
func serverVersion(_ http: GatewayHTTP, _ name: String) async throws -> Int {
    let body = try await http.expect(200, "GET", "/v1/scopes/\(name)")
    guard let version = try JSONParser.parse(body)["version"]?.number?.int64Value else {
        throw BenchError("GET /v1/scopes/\(name): no version")
    }
    return Int(version)
}

/// The files under `directory` (it holds one scope's folder: `copy`, `journal`, `lock`) and their sizes.
func fileSizes(in directory: URL) throws -> [String: Int] {
    guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey]) else {
        throw BenchError("cannot list \(directory.path)")
    }
    var sizes: [String: Int] = [:]
    for case let file as URL in files {
        let values = try file.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
        if values.isRegularFile == true { sizes[file.lastPathComponent, default: 0] += values.fileSize ?? 0 }
    }
    return sizes
}
