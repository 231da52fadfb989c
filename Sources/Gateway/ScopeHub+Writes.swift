import HTTPServer
import HTTPTypes
import JetstreamModel
import Logging
import Store
import Synchronization

/// What a change-set submission ends in.
enum SubmitOutcome: Sendable {
    /// Durable: the `200` body and the new version.
    case accepted(body: [UInt8], version: Int)
    case failed(Problem)
    /// The stored first outcome of an idempotency key, answered again.
    case replayed(IdempotencyRecord)
}

extension ScopeHub {
    /// Validates and applies `changeSet` to the scope's staged state, then appends it durably;
    /// `completion` runs once the record is durable (on the store's thread) or at once when the set
    /// is rejected. The change set is queued to every subscriber's loop before the answer is
    /// given; the answer then jumps ahead of that fan-out on the writer's loop (the responder
    /// delivers with `executeUrgently`), so it does not wait for thousands of stream writes.
    ///
    /// Submissions to one scope are serialised by the scope's lock; the next one is validated
    /// against the staged state while earlier ones are still being made durable, so concurrent
    /// writers of one scope share the store's group commit.
    func submit(
        _ changeSet: ChangeSet, to handle: ScopeHandle, ifMatch: EntityTag.Condition?,
        idempotency: IdempotencyRequest? = nil, completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        let fragmentCount = changeSet.count
        let decision: Result<(ScopeState, ChangeSetPayload), Problem> = handle.runtime.withLock { runtime in
            guard !runtime.deleted else {
                return .failure(Problem(.notFound, detail: "no scope named '\(handle.name)'"))
            }
            if let ifMatch, !Self.matches(ifMatch, version: runtime.tip.version) {
                return .failure(
                    Problem(
                        .preconditionFailed,
                        detail: "If-Match does not name the scope's version \(runtime.tip.version)",
                        extensions: ["version": .number(JSONNumber(runtime.tip.version))],
                        headers: [.eTag: EntityTag.header(for: runtime.tip.version)]))
            }
            switch runtime.tip.applying(changeSet, schema: schema, limits: configuration.limits) {
            case .rejected(let replies):
                let failed = replies.filter { $0.error != nil }.count
                return .failure(
                    Problem(
                        .invalidChangeSet,
                        detail: "\(failed) of \(replies.count) fragments were rejected; nothing was applied",
                        extensions: ["fragmentReplies": .array(replies.map(\.jsonValue))]))
            case .accepted(let applied):
                let payload = ScopeEvents.changeSetPayload(applied)
                runtime.tip = applied.state
                let record = idempotency?.record(
                    status: 200, response: payload.acceptedResponse(fragmentCount: fragmentCount))
                let appendStarted = ContinuousClock.now
                // Appended inside the lock so the store receives this scope's versions in order.
                store.append(
                    AppendRequest(
                        scope: handle.name, version: Int64(payload.version), payload: payload.bytes,
                        idempotency: record)
                ) { [self] result in
                    metrics.recordCommit(since: appendStarted)
                    didCommit(
                        payload, state: applied.state, of: handle, result: result, fragmentCount: fragmentCount,
                        encodedAnswer: record?.response, completion: completion)
                }
                return .success((applied.state, payload))
            }
        }
        if case .failure(let problem) = decision {
            if let idempotency, IdempotencyRequest.isStored(problem) {
                recordRejection(problem, idempotency: idempotency, of: handle, completion: completion)
            } else {
                completion(.failed(problem))
            }
        }
    }

    /// Runs on the store's commit thread, in version order per scope.
    private func didCommit(
        _ payload: ChangeSetPayload, state: ScopeState, of handle: ScopeHandle, result: Result<Void, StoreError>,
        fragmentCount: Int, encodedAnswer: [UInt8]? = nil, completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        switch result {
        case .success:
            let event = payload.event
            let committedAt = ContinuousClock.now
            handle.runtime.withLock { runtime in
                runtime.committed = state
                runtime.recent.append(.init(version: payload.version, payload: payload.bytes, event: event))
                while runtime.recent.count > configuration.resumeBufferSize { runtime.recent.removeFirst() }
                runtime.oldestResumable = max(runtime.oldestResumable, payload.version - configuration.historyLimit)
                // Published under the lock: a subscriber registering now is ordered before or after it.
                handle.subscribers.broadcast(encoded: event)
            }
            metrics.recordFanOut(since: committedAt)
            // A keyed request's answer was encoded once already, for its idempotency record.
            let body = encodedAnswer ?? payload.acceptedResponse(fragmentCount: fragmentCount)
            completion(.accepted(body: body, version: payload.version))
            if configuration.snapshotInterval > 0, payload.version % configuration.snapshotInterval == 0 {
                writeSnapshot(state, of: handle)
            }
        case .failure(let error):
            // Later staged versions were built on this one; the store refuses them too (version
            // conflict), and each rolls the staged state back to the durable one.
            handle.runtime.withLock { $0.tip = $0.committed }
            completion(.failed(storeProblem(error)))
        }
    }

    private func writeSnapshot(_ state: ScopeState, of handle: ScopeHandle) {
        let store = self.store
        let logger = self.logger
        Task.detached(priority: .background) {
            do {
                try await store.writeSnapshot(
                    scope: handle.name, version: Int64(state.version), snapshot: ScopeEvents.snapshotJSON(state: state))
            } catch {
                logger.warning(
                    "snapshot failed",
                    metadata: [
                        "scope": "\(handle.name)", "version": "\(state.version)",
                        "error": "\(error)",
                    ])
            }
        }
    }

    static func matches(_ condition: EntityTag.Condition, version: Int) -> Bool {
        switch condition {
        case .any: true
        case .none: false
        case .versions(let versions): versions.contains(version)
        }
    }
}
