import Synchronization

/// Hands out the next version of a scope and runs `enqueue` under the same lock, so versions reach the
/// store in order.
final class ScopeSequencer: Sendable {
    private let versions = Mutex<[String: Int64]>([:])

    func next(_ scope: String, enqueue: (Int64) -> Void) {
        versions.withLock { versions in
            let version = (versions[scope] ?? 0) + 1
            versions[scope] = version
            enqueue(version)
        }
    }
}
