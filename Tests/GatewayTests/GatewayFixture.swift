import Foundation
import JetstreamModel
import Logging
import Store

@testable import Gateway

/// A hub over a real SQLite store in a fresh temporary directory.
final class GatewayFixture: Sendable {
    let directory: URL
    let store: SQLiteStore
    let hub: ScopeHub

    init(configuration: GatewayConfiguration = GatewayConfiguration(schema: .demo), directory: URL? = nil) throws {
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        var storeConfiguration = SQLiteStore.Configuration()
        storeConfiguration.retainedChangeSets = configuration.historyLimit
        store = try SQLiteStore(
            path: directory.appendingPathComponent("jetstream.sqlite").path, configuration: storeConfiguration)
        hub = ScopeHub(configuration: configuration, store: store, logger: Logger(label: "test"))
    }

    func close() { store.close() }

    func removeFiles() { try? FileManager.default.removeItem(at: directory) }

    /// Creates a `canvas-*` scope with an empty canvas.
    func createCanvas(_ name: String = "canvas-1") async throws -> ScopeHandle {
        try await hub.create(name: name, rootClassName: "Canvas", rootUUID: nil, properties: JSONObject())
    }

    func submit(
        _ fragments: [JSONValue], to handle: ScopeHandle, ifMatch: EntityTag.Condition? = nil
    ) async
        -> SubmitOutcome
    {
        await withCheckedContinuation { continuation in
            hub.submit(ChangeSet(json: fragments), to: handle, ifMatch: ifMatch) { continuation.resume(returning: $0) }
        }
    }

    /// A fragment list that adds a shape at (`x`, 0) and appends it to the canvas' shapes.
    static func addShape(_ shape: UUID, x: Double, to handle: ScopeHandle) -> [JSONValue] {
        let state = handle.committedState
        let root = state.root
        var shapes =
            root["shapes"].map { value -> [JSONValue] in
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
}

extension SubmitOutcome {
    var version: Int? {
        if case .accepted(_, let version) = self { return version }
        return nil
    }

    var problem: Problem? {
        if case .failed(let problem) = self { return problem }
        return nil
    }
}
