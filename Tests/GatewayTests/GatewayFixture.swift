import Foundation
import JetstreamModel
import Logging
import Store

@testable import Gateway
@testable import ScopeEngine

/// An engine prepared for the gateway (problem+json rejections, stream subscribers, metrics) over
/// a real SQLite store in a fresh temporary directory.
final class GatewayFixture: Sendable {
    let directory: URL
    let store: SQLiteStore
    let engine: ScopeEngine
    let metrics = GatewayMetrics()

    init(
        configuration: ScopeEngineConfiguration = ScopeEngineConfiguration(schema: .demo), directory: URL? = nil
    ) throws {
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        var storeConfiguration = SQLiteStore.Configuration()
        storeConfiguration.retainedChangeSets = configuration.historyLimit
        store = try SQLiteStore(
            path: directory.appendingPathComponent("jetstream.sqlite").path, configuration: storeConfiguration)
        var configuration = configuration
        Gateway.prepare(&configuration, metrics: metrics)
        engine = ScopeEngine(configuration: configuration, store: store, logger: Logger(label: "test"))
    }

    func close() { store.close() }

    func removeFiles() { try? FileManager.default.removeItem(at: directory) }

    /// Creates a `canvas-*` scope with an empty canvas.
    func createCanvas(_ name: String = "canvas-1") async throws -> ScopeHandle {
        try await engine.create(name: name, rootClassName: "Canvas")
    }
}

extension SubmitOutcome {
    /// The problem a rejected submission is answered with.
    var problem: Problem? { error.map(Problem.init) }
}
