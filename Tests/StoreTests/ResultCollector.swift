import Store
import Synchronization

/// Collects completion results by label from whatever thread the store completes on.
final class ResultCollector: Sendable {
    private let results = Mutex<[String: Result<Void, StoreError>]>([:])

    func add(_ label: String, _ result: Result<Void, StoreError>) { results.withLock { $0[label] = result } }

    var count: Int { results.withLock { $0.count } }

    func outcome(_ label: String) -> Result<Void, StoreError>? { results.withLock { $0[label] } }

    /// The error of `label`'s completion, `nil` when it succeeded (or has not completed).
    func failure(_ label: String) -> StoreError? {
        guard case .failure(let error) = outcome(label) else { return nil }
        return error
    }

    func succeeded(_ label: String) -> Bool {
        guard case .success = outcome(label) else { return false }
        return true
    }

    var failures: [String: StoreError] {
        results.withLock { results in results.compactMapValues { if case .failure(let e) = $0 { e } else { nil } } }
    }
}
