import Store
import Synchronization

/// Versions handed out and enqueued under one lock per scope, so pipelined appends reach the store in order.
final class Sequencer: Sendable {
    let versions = Mutex<[String: Int64]>([:])

    func append(_ store: SQLiteStore, scope: String, done: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        versions.withLock { versions in
            let version = (versions[scope] ?? 0) + 1
            versions[scope] = version
            store.append(AppendRequest(scope: scope, version: version, payload: payload(version)), completion: done)
        }
    }
}
