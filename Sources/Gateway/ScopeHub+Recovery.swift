import Foundation
import JetstreamModel
import Store
import Synchronization

/// Why a stored scope could not be loaded at start; the gateway refuses to start half-recovered.
public struct RecoveryError: Error, CustomStringConvertible {
    public let scope: String
    public let version: Int
    public let message: String

    public var description: String { "cannot recover scope '\(scope)' at version \(version): \(message)" }
}

extension ScopeHub {
    /// Loads every stored scope: its latest snapshot, then the change sets logged after it,
    /// re-applied through the model core. Returns the number of scopes and change sets replayed.
    @discardableResult
    public func recover() async throws -> (scopes: Int, replayed: Int) {
        var loaded: [ScopeHandle] = []
        var replayed = 0
        let schema = self.schema
        let bufferSize = configuration.resumeBufferSize
        try await store.recover { scope in
            let handle = try Self.restore(scope, schema: schema, bufferSize: bufferSize)
            replayed += scope.tail.count
            loaded.append(handle)
        }
        scopes.withLock { scopes in
            for handle in loaded { scopes[handle.name] = handle }
        }
        return (loaded.count, replayed)
    }

    static func restore(_ scope: RecoveredScope, schema: Schema, bufferSize: Int) throws -> ScopeHandle {
        let name = scope.info.name
        func failure(_ version: Int64, _ message: String) -> RecoveryError {
            RecoveryError(scope: name, version: Int(version), message: message)
        }
        let snapshot: JSONValue
        do {
            snapshot = try JSONParser.parse(scope.snapshot)
        } catch {
            throw failure(scope.snapshotVersion, "snapshot is not JSON: \(error)")
        }
        guard let rootText = snapshot["rootUUID"]?.string, let rootUUID = UUID(wireString: rootText),
            let fragmentValues = snapshot["fragments"]?.array
        else { throw failure(scope.snapshotVersion, "snapshot lacks rootUUID or fragments") }
        var state: ScopeState
        do {
            let fragments = try fragmentValues.map { value throws(FragmentError) in try SyncFragment(json: value) }
            state = try ScopeState(
                importing: fragments, rootUUID: rootUUID, version: Int(scope.snapshotVersion), schema: schema)
        } catch {
            throw failure(scope.snapshotVersion, "snapshot does not load: \(error)")
        }
        var recent: [ScopeHandle.RecentChangeSet] = []
        let bufferFrom = max(0, scope.tail.count - bufferSize)
        for (index, record) in scope.tail.enumerated() {
            let payload: JSONValue
            do {
                payload = try JSONParser.parse(record.payload)
            } catch {
                throw failure(record.version, "logged change set is not JSON: \(error)")
            }
            guard let fragments = payload["fragments"]?.array else {
                throw failure(record.version, "logged change set has no fragments")
            }
            switch state.applying(ChangeSet(json: fragments), schema: schema, limits: .unlimited) {
            case .accepted(let applied) where applied.state.version == Int(record.version):
                state = applied.state
            case .accepted(let applied):
                throw failure(record.version, "replay produced version \(applied.state.version)")
            case .rejected(let replies):
                let reason = replies.compactMap(\.error).first.map { "\($0)" } ?? "rejected"
                throw failure(record.version, "the schema no longer accepts it: \(reason)")
            }
            if index >= bufferFrom {
                recent.append(
                    .init(
                        version: Int(record.version), payload: record.payload,
                        event: ScopeEvents.event("changeset", id: Int(record.version), json: record.payload)))
            }
        }
        let handle = ScopeHandle(name: name, state: state, oldestResumable: Int(scope.info.oldestResumableVersion))
        handle.runtime.withLock { runtime in
            runtime.recent.append(contentsOf: recent)
        }
        return handle
    }
}
