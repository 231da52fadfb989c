import HTTPServer
import HTTPTypes
import JetstreamModel
import Logging
import Store
import Synchronization

extension ScopeHub {
    /// Submits a change set that carries an `Idempotency-Key`: the first request with the key is
    /// applied and its outcome stored in the same durable commit as the change set (or, for a
    /// rejection, with ``Store/ChangeLogStore/recordRejection(scope:_:completion:)``); a retry with
    /// the same body gets that outcome again, one with another body `422 idempotency-key-reused`.
    ///
    /// Per scope and key only one request is decided at a time: a second one arriving while the
    /// first is still being validated or made durable is answered `409 idempotency-key-in-flight`
    /// at once (never applied twice, and no request waits on another).
    func submitOnce(
        _ changeSet: ChangeSet, to handle: ScopeHandle, ifMatch: EntityTag.Condition?,
        idempotency: IdempotencyRequest, completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        let key = idempotency.key
        let registered = handle.runtime.withLock { $0.idempotencyInFlight.insert(key).inserted }
        guard registered else {
            completion(
                .failed(
                    Problem(
                        .idempotencyKeyInFlight,
                        detail: "a request with Idempotency-Key '\(key)' is still in flight; retry once it is answered",
                        headers: [.retryAfter: "1"])))
            return
        }
        // Released only after the outcome is durable, so a later lookup finds it.
        let finish: @Sendable (SubmitOutcome) -> Void = { outcome in
            handle.runtime.withLock { _ = $0.idempotencyInFlight.remove(key) }
            completion(outcome)
        }
        Task {
            let stored: IdempotencyRecord?
            do throws(StoreError) {
                stored = try await store.idempotencyRecord(scope: handle.name, key: key)
            } catch {
                finish(.failed(storeProblem(error)))
                return
            }
            guard let stored else {
                submit(changeSet, to: handle, ifMatch: ifMatch, idempotency: idempotency, completion: finish)
                return
            }
            if stored.requestDigest == idempotency.digest {
                metrics.countReplay()
                finish(.replayed(stored))
            } else {
                finish(
                    .failed(
                        Problem(
                            .idempotencyKeyReused,
                            detail:
                                "Idempotency-Key '\(key)' was already used for a different request body; use a new key")
                    ))
            }
        }
    }

    /// Stores a final rejection under its key, then answers it (the answer does not wait on a
    /// store failure: the rejection stands, only its replay is lost).
    func recordRejection(
        _ problem: Problem, idempotency: IdempotencyRequest, of handle: ScopeHandle,
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        let record = idempotency.record(status: Int(problem.kind.status.code), response: problem.response.body)
        let logger = self.logger
        store.recordRejection(scope: handle.name, record) { result in
            if case .failure(let error) = result {
                logger.warning(
                    "idempotency record not stored",
                    metadata: ["scope": "\(handle.name)", "error": "\(error)"])
            }
            completion(.failed(problem))
        }
    }
}
