import Foundation
import JetstreamModel
import Logging
import ScopeEngine
import Store

extension GatewayServer {
    /// How the scopes stored where `configuration` points (its data directory, or its database)
    /// fit `schema`, read in one pass without serving: what `jetstream check-schema --data-dir`
    /// reports before a deploy. The embedded store must exist and not be open in a running
    /// gateway (check a `jetstream backup` of it instead); a database may be in use, and is only
    /// read (nothing is created or migrated).
    public static func checkStoredData(
        _ configuration: GatewayServerConfiguration, schema: Schema, logger: Logger
    ) async throws -> SchemaFitReport {
        if configuration.databaseURL == nil, !FileManager.default.fileExists(atPath: configuration.storePath) {
            throw StoreError.openFailed(
                path: configuration.storePath,
                message: "no store there: give --data-dir the directory `jetstream serve --data-dir` uses")
        }
        let store = try openStore(configuration, readsOnly: true, logger: logger)
        defer { store.close() }
        let engine = ScopeEngine(
            configuration: ScopeEngineConfiguration(schema: schema), store: store, logger: logger)
        return try await engine.checkStoredData()
    }
}
