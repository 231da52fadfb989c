import Foundation
import JetstreamModel
import Logging
import Store
import Synchronization

@testable import ScopeEngine

/// An engine over a real SQLite store in a fresh temporary directory.
final class EngineFixture: Sendable {
    let directory: URL
    let store: SQLiteStore
    let engine: ScopeEngine

    init(
        configuration: ScopeEngineConfiguration = ScopeEngineConfiguration(schema: .demo), directory: URL? = nil
    ) throws {
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        var storeConfiguration = SQLiteStore.Configuration()
        storeConfiguration.retainedChangeSets = configuration.historyLimit
        store = try SQLiteStore(path: Self.storePath(in: directory), configuration: storeConfiguration)
        engine = ScopeEngine(configuration: configuration, store: store, logger: Logger(label: "test"))
    }

    static func storePath(in directory: URL) -> String { directory.appendingPathComponent("jetstream.sqlite").path }

    var storePath: String { Self.storePath(in: directory) }

    func close() { store.close() }

    func removeFiles() { try? FileManager.default.removeItem(at: directory) }

    /// Creates a `canvas-*` scope with an empty canvas.
    func createCanvas(_ name: String = "canvas-1") async throws -> ScopeHandle {
        try await engine.create(name: name, rootClassName: "Canvas", rootUUID: nil, properties: JSONObject())
    }

    func submit(
        _ fragments: [JSONValue], to handle: ScopeHandle, ifMatch: VersionCondition? = nil
    ) async
        -> SubmitOutcome
    {
        await withCheckedContinuation { continuation in
            engine.submit(ChangeSet(json: fragments), to: handle, ifMatch: ifMatch) {
                continuation.resume(returning: $0)
            }
        }
    }

    func submitOnce(
        _ fragments: [JSONValue], to handle: ScopeHandle, key: String, subject: String? = nil
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            let idempotency = IdempotencyKey(key: key, subject: subject, body: Self.body(fragments))
            engine.submitOnce(ChangeSet(json: fragments), to: handle, idempotency: idempotency) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// Submits `count` shapes one after another; returns the versions they got (nil for a failure).
    @discardableResult
    func addShapes(_ count: Int, to handle: ScopeHandle) async -> [Int?] {
        var versions: [Int?] = []
        for index in 0..<count {
            versions.append(await submit(Self.addShape(UUID(), x: Double(index), to: handle), to: handle).version)
        }
        return versions
    }

    /// Starts a recorder on `handle` at `point`.
    func subscribe(to handle: ScopeHandle, from point: ResumePoint) -> Recorder {
        let recorder = Recorder()
        engine.subscribe(recorder, to: handle, from: point)
        return recorder
    }

    /// The request body an idempotency key is bound to: the fragments as JSON.
    static func body(_ fragments: [JSONValue]) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.write(.array(fragments))
        return writer.bytes
    }

    /// A fragment list that adds a shape at (`x`, 0) and appends it to the canvas' shapes.
    static func addShape(_ shape: UUID, x: Double, to handle: ScopeHandle) -> [JSONValue] {
        addShape(shape, x: x, to: handle.committedState)
    }

    static func addShape(_ shape: UUID, x: Double, to state: ScopeState) -> [JSONValue] {
        var shapes =
            state.root["shapes"].map { value -> [JSONValue] in
                if case .references(let uuids) = value { return uuids.map { .string($0.wireString) } }
                return []
            } ?? []
        shapes.append(.string(shape.wireString))
        return [
            [
                "type": "add", "uuid": .string(shape.wireString), "clsName": "Shape",
                "properties": ["x": .number(JSONNumber(x)), "y": 0],
            ],
            [
                "type": "change", "uuid": .string(state.rootUUID.wireString), "clsName": "Canvas",
                "properties": ["shapes": .array(shapes)],
            ],
        ]
    }

    /// A one-fragment change of the canvas' name (never conflicts with another writer's).
    static func rename(_ handle: ScopeHandle, to name: String) -> [JSONValue] {
        [
            [
                "type": "change", "uuid": .string(handle.committedState.rootUUID.wireString), "clsName": "Canvas",
                "properties": ["name": .string(name)],
            ]
        ]
    }
}

/// A subscriber that records the kind and version of every event it receives, and whether it ended.
final class Recorder: ScopeSubscriber {
    struct Received: Sendable, Equatable {
        let kind: ScopeEvent.Kind
        let version: Int?
    }

    private let state = Mutex<(events: [ScopeEvent], ended: Bool)>(([], false))

    func receive(_ event: ScopeEvent) {
        state.withLock { $0.events.append(event) }
    }

    func end() {
        state.withLock { $0.ended = true }
    }

    var events: [ScopeEvent] { state.withLock { $0.events } }
    var received: [Received] { events.map { Received(kind: $0.kind, version: $0.version) } }
    var ended: Bool { state.withLock { $0.ended } }

    /// The versions of the change-set events, in the order received.
    var changesetVersions: [Int] { events.filter { $0.kind == .changeset }.compactMap(\.version) }

    /// Waits (polling every 10 ms, at most `timeout`) until `count` events arrived; true when they did.
    @discardableResult
    func waitFor(count: Int, timeout: Duration = .seconds(5)) async -> Bool {
        await waitUntil(timeout: timeout) { self.events.count >= count }
    }

    /// Waits (bounded as ``waitFor(count:timeout:)``) until the subscription ended.
    @discardableResult
    func waitForEnd(timeout: Duration = .seconds(5)) async -> Bool {
        await waitUntil(timeout: timeout) { self.ended }
    }
}

/// Polls `condition` every 10 ms for at most `timeout`; true once it holds.
func waitUntil(timeout: Duration = .seconds(5), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Outcomes of submissions made with a completion (no task waits on them), by index.
final class Outcomes: Sendable {
    private let results = Mutex<[Int: SubmitOutcome]>([:])

    /// A completion that stores its outcome under `index`.
    func completion(_ index: Int) -> @Sendable (SubmitOutcome) -> Void {
        { outcome in self.results.withLock { $0[index] = outcome } }
    }

    subscript(index: Int) -> SubmitOutcome? { results.withLock { $0[index] } }

    var count: Int { results.withLock { $0.count } }

    /// Waits (bounded, polling every 10 ms) until `count` outcomes arrived; true when they did.
    @discardableResult
    func waitFor(count: Int, timeout: Duration = .seconds(5)) async -> Bool {
        await waitUntil(timeout: timeout) { self.count >= count }
    }
}
