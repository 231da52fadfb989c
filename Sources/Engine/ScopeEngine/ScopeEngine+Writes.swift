import JetstreamJSON
import JetstreamModel
import Logging
import Store
import Synchronization

/// What a change-set submission ends in.
public enum SubmitOutcome: Sendable {
    /// Durable: the writer's answer `{"version","fragmentReplies","fragments","removed"}` and the
    /// new version.
    case accepted(body: [UInt8], version: Int)
    case rejected(ScopeError)
    /// The stored first outcome of an idempotency key, answered again.
    case replayed(IdempotencyRecord)

    /// The new version of an accepted change set.
    public var version: Int? {
        if case .accepted(_, let version) = self { return version }
        return nil
    }

    /// Why a change set was refused.
    public var error: ScopeError? {
        if case .rejected(let error) = self { return error }
        return nil
    }
}

extension ScopeEngine {
    /// Validates and applies `changeSet` to the scope's staged state, then appends it durably;
    /// `completion` runs once the record is durable (on the store's thread) or at once when the set
    /// is rejected. The change set is handed to the scope's subscribers before `completion` runs.
    ///
    /// Submissions to one scope are serialised by the scope's lock; the next one is validated
    /// against the staged state while earlier ones are still being made durable, so concurrent
    /// writers of one scope share the store's group commit. With an `idempotency` key, see
    /// ``submitOnce(_:to:ifMatch:idempotency:completion:)``.
    ///
    /// On a shared store a refusal is judged at the store's latest version: a set rejected on this
    /// node's copy, or an `If-Match` it does not meet, is judged again once the scope has caught
    /// up from the log (``mayBeBehind(_:)``), and only then answered.
    ///
    /// ```swift
    /// engine.submit(ChangeSet(json: fragments), to: handle, ifMatch: .versions([4])) { outcome in … }
    /// ```
    public func submit(
        _ changeSet: ChangeSet, to handle: ScopeHandle, ifMatch: VersionCondition? = nil,
        origin: ChangeOrigin = ChangeOrigin(), completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        if let error = Self.shapeError(changeSet, limits: configuration.limits) {
            return completion(.rejected(error))
        }
        stage(
            Submission(.changeSet(changeSet), origin: origin), to: handle, ifMatch: ifMatch, idempotency: nil,
            completion: completion)
    }

    /// Submits a merge patch of one object (``JetstreamModel/MergePatch``) as one change set:
    /// it is translated against the staged state under the scope's lock, so nested objects are
    /// merged or added by what the scope holds at that moment, then validated, versioned and made
    /// durable exactly like ``submit(_:to:ifMatch:completion:)``. A rejection is
    /// ``ScopeError/mergePatchRejected(_:)`` with JSON Pointers into the patch; an unknown target
    /// is ``ScopeError/objectNotFound(scope:uuid:)``. With an `idempotency` key it is decided once,
    /// as ``submitOnce(_:to:ifMatch:idempotency:completion:)`` decides change sets.
    ///
    /// ```swift
    /// engine.submit(MergePatch(target: shape, document: ["x": 12]), to: handle) { outcome in … }
    /// ```
    public func submit(
        _ patch: MergePatch, to handle: ScopeHandle, ifMatch: VersionCondition? = nil,
        idempotency: IdempotencyKey? = nil, origin: ChangeOrigin = ChangeOrigin(),
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        submit(
            Submission(.mergePatch(patch), origin: origin), to: handle, ifMatch: ifMatch, idempotency: idempotency,
            completion: completion)
    }

    /// Stages `submission`, once per key when it carries one.
    func submit(
        _ submission: Submission, to handle: ScopeHandle, ifMatch: VersionCondition?, idempotency: IdempotencyKey?,
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        if let idempotency {
            submitOnce(submission, to: handle, ifMatch: ifMatch, idempotency: idempotency, completion: completion)
        } else {
            stage(submission, to: handle, ifMatch: ifMatch, idempotency: nil, completion: completion)
        }
    }

    /// A store known to be out of reach refuses a write at once rather than after its reads and
    /// its append time out (docs/store.md, "When the database stops answering").
    func outageRefusal() -> SubmitOutcome? {
        guard let reason = store.unavailability else { return nil }
        return .rejected(.store(.unavailable(reason)))
    }

    /// The fragment count is checked once, here, before anything is applied.
    static func shapeError(_ changeSet: ChangeSet, limits: Limits) -> ScopeError? {
        if changeSet.count == 0 { return .emptyChangeSet }
        if changeSet.count > limits.maxFragmentsPerSet {
            return .tooManyFragments(count: changeSet.count, limit: limits.maxFragmentsPerSet)
        }
        return nil
    }

    /// What a writer submits — fragments, or what becomes fragments against the staged state —
    /// and the origin recorded with it.
    struct Submission: Sendable {
        enum Change: Sendable {
            case changeSet(ChangeSet)
            case mergePatch(MergePatch)
            /// Back to a past state: the difference from the staged state to `state`.
            case restore(ScopeState)
            /// The undoing of one change set, planned against the log up to `plannedAt`: staged
            /// only on that version (otherwise planned again).
            case revert(fragments: [SyncFragment], plannedAt: Int)
            /// A server method, run under the lock against the staged state (ScopeMethod.swift).
            case method(ScopeMethod, args: JSONValue, claims: JSONValue?)
        }

        var change: Change
        var origin: ChangeOrigin

        init(_ change: Change, origin: ChangeOrigin) {
            self.change = change
            self.origin = origin
        }
    }
}

extension ScopeEngine {
    /// Validates and stages `submission`. A rejection that may be due to this node's copy being
    /// behind a shared store (``mayBeBehind(_:)``) is not answered here unless
    /// `judgedAtStoreHead`: the submission is queued to be judged again after a catch-up
    /// (ScopeEngine+Revalidation.swift).
    func stage(
        _ submission: Submission, to handle: ScopeHandle, ifMatch: VersionCondition?, idempotency: IdempotencyKey?,
        attempt: Int = 0, judgedAtStoreHead: Bool = false, completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        // A cold copy would otherwise wait for its catch-up read to time out first.
        if attempt == 0, let refusal = outageRefusal() { return completion(refusal) }
        var unchangedAt: Int?
        var coldCopy = false
        /// A method's result, for its answer.
        var methodResult: JSONValue?
        let rejection: ScopeError? = handle.runtime.withLock { runtime in
            guard !runtime.deleted else { return .scopeNotFound(handle.name) }
            // A copy the follower left behind is caught up before anything is judged on it
            // (staged on it, the append would only lose a version race).
            if !judgedAtStoreHead, runtime.announcedVersion > runtime.committed.version, runtime.staged.isEmpty {
                coldCopy = true
                return nil
            }
            if let ifMatch, !ifMatch.matches(runtime.tip.version) {
                return .versionMismatch(current: runtime.tip.version)
            }
            let changeSet: ChangeSet
            var translation: MergePatchTranslation?
            // Writers are judged by the schema's rules; what the server does itself is not.
            var author = submission.origin.author
            switch submission.change {
            case .changeSet(let submitted):
                changeSet = submitted
            case .restore(let past):
                let fragments = runtime.tip.difference(to: past)
                if fragments.isEmpty {
                    unchangedAt = runtime.tip.version
                    return nil
                }
                changeSet = ChangeSet(fragments: fragments)
                author = .server(subject: submission.origin.subject)
            case .revert(let fragments, let plannedAt):
                guard runtime.tip.version == plannedAt else { return .revertOutdated(scope: handle.name) }
                if fragments.isEmpty {
                    // The set changed nothing that still differs: nothing to undo.
                    unchangedAt = runtime.tip.version
                    return nil
                }
                changeSet = ChangeSet(fragments: fragments)
                author = .server(subject: submission.origin.subject)
            case .method(let method, let args, let claims):
                let call = MethodCall(
                    scope: handle.name, state: runtime.tip, args: args, subject: submission.origin.subject,
                    claims: claims, schema: schema)
                let outcome: MethodOutcome
                switch Self.run(method, call) {
                case .success(let returned): outcome = returned
                case .failure(let error): return error
                }
                methodResult = outcome.result
                if outcome.fragments.isEmpty {
                    unchangedAt = runtime.tip.version
                    return nil
                }
                changeSet = ChangeSet(fragments: outcome.fragments)
                if outcome.actsAsServer { author = .server(subject: submission.origin.subject) }
                if let error = Self.shapeError(changeSet, limits: configuration.limits) { return error }
            case .mergePatch(let patch):
                do throws(MergePatch.Failure) {
                    let translated = try patch.translate(against: runtime.tip, schema: schema)
                    if translated.changesNothing {
                        // Nothing to merge: the current version answers, no version is made.
                        unchangedAt = runtime.tip.version
                        return nil
                    }
                    translation = translated
                    changeSet = translated.changeSet
                } catch {
                    switch error {
                    case .objectNotFound(let uuid): return .objectNotFound(scope: handle.name, uuid: uuid)
                    case .invalid(let errors): return .mergePatchRejected(errors)
                    }
                }
                if let error = Self.shapeError(changeSet, limits: configuration.limits) { return error }
            }
            let fragmentCount = changeSet.count
            switch runtime.tip.applying(changeSet, schema: schema, limits: configuration.limits, author: author) {
            case .rejected(let replies):
                return translation.map { .mergePatchRejected($0.errors(for: replies)) } ?? .changeSetRejected(replies)
            case .accepted(let applied):
                let payload = ChangeSetPayload(
                    applied, idempotencyKey: idempotency?.key, origin: submission.origin,
                    at: ChangeTime.rfc3339(millisecondsSince1970: configuration.wallClock()))
                let lineage = runtime.stage(applied.state, payload: payload.bytes)
                let returned = methodResult
                let record = idempotency?.record(
                    status: 200, response: Self.answer(payload, fragmentCount: fragmentCount, result: returned))
                let appendStarted = ContinuousClock.now
                // Appended inside the lock so the store receives this scope's versions in order.
                store.append(
                    AppendRequest(
                        scope: handle.name, version: Int64(payload.version), payload: payload.bytes,
                        idempotency: record, parentToken: lineage.parent, token: lineage.token)
                ) { [self] result in
                    configuration.observer?.didCommit(after: ContinuousClock.now - appendStarted)
                    if case .failure(let error) = result, error.isLostRace, attempt < configuration.conflictRetries {
                        // Another node's version took the slot (or the one this was built on):
                        // the scope catches up once from the shared log, then the submissions
                        // that lost are validated again on the newer state, in their order.
                        configuration.observer?.didRetryAfterConflict()
                        queue(
                            Revalidation(
                                submission: submission, ifMatch: ifMatch, idempotency: idempotency,
                                attempt: attempt + 1, completion: completion), on: handle
                        ) { $0.didFail(token: lineage.token) }
                        return
                    }
                    didCommit(
                        payload, state: applied.state, token: lineage.token, of: handle, result: result,
                        answer: record?.response
                            ?? Self.answer(payload, fragmentCount: fragmentCount, result: returned),
                        completion: completion)
                }
                return nil
            }
        }
        if coldCopy {
            return queue(
                Revalidation(
                    submission: submission, ifMatch: ifMatch, idempotency: idempotency, attempt: attempt,
                    completion: completion), on: handle)
        }
        if let unchangedAt {
            if !judgedAtStoreHead, store is any SharedChangeLogStore {
                // "Nothing to change" judged on a copy that may be behind the store: judged again
                // after a catch-up, as a refusal would be.
                return queue(
                    Revalidation(
                        submission: submission, ifMatch: ifMatch, idempotency: idempotency, attempt: attempt,
                        completion: completion), on: handle)
            }
            var body = Array(#"{"version":\#(unchangedAt),"fragmentReplies":[],"fragments":[],"removed":[]}"#.utf8)
            if case .method(let method, _, _) = submission.change {
                var writer = JSONWriter(capacity: 64)
                writer.writeRaw(#","method":"#)
                writer.write(string: method.name)
                body.removeLast()
                body += writer.bytes
                body = Self.spliced(body + [UInt8(ascii: "}")], result: methodResult ?? .null)
            }
            let unchangedBody = body
            guard let idempotency else { return completion(.accepted(body: unchangedBody, version: unchangedAt)) }
            // Stored under its key like any outcome, so a retry replays it even after the scope
            // moved on (no version is logged with it).
            let logger = self.logger
            store.recordRejection(scope: handle.name, idempotency.record(status: 200, response: unchangedBody)) {
                result in
                if case .failure(let failure) = result {
                    logger.warning(
                        "idempotency record not stored", metadata: ["scope": "\(handle.name)", "error": "\(failure)"])
                }
                completion(.accepted(body: unchangedBody, version: unchangedAt))
            }
            return
        }
        guard let rejection else { return }
        if !judgedAtStoreHead, mayBeBehind(rejection) {
            // Judged on a copy that may be behind the store: answered (and stored under its
            // idempotency key) only once judged again after a catch-up.
            return queue(
                Revalidation(
                    submission: submission, ifMatch: ifMatch, idempotency: idempotency, attempt: attempt,
                    completion: completion), on: handle)
        }
        if let idempotency, rejection.isFinalForIdempotency {
            recordRejection(rejection, idempotency: idempotency, of: handle, completion: completion)
        } else {
            completion(.rejected(rejection))
        }
    }

    /// A method's run: what it returns, or why nothing is applied.
    static func run(_ method: ScopeMethod, _ call: MethodCall) -> Result<MethodOutcome, ScopeError> {
        do {
            return .success(try method.handler(call))
        } catch let refusal as MethodRejection {
            return .failure(.methodRejected(method: method.name, reason: refusal.reason))
        } catch is PlanOutdated {
            return .failure(.methodOutdated(method: method.name, attempts: 1))
        } catch {
            return .failure(.methodFailed(method: method.name, detail: "\(error)"))
        }
    }

    /// The writer's answer: the payload with its replies, and a method's `"result"` last.
    static func answer(_ payload: ChangeSetPayload, fragmentCount: Int, result: JSONValue?) -> [UInt8] {
        let body = payload.acceptedResponse(fragmentCount: fragmentCount)
        guard let result else { return body }
        return spliced(body, result: result)
    }

    /// `{…}` → `{…,"result":R}`.
    static func spliced(_ body: [UInt8], result: JSONValue) -> [UInt8] {
        var spliced = body
        spliced.removeLast()
        spliced += Array(#","result":"#.utf8)
        spliced += result.encoded()
        spliced.append(UInt8(ascii: "}"))
        return spliced
    }

    /// Runs on the store's commit thread, in version order per scope.
    private func didCommit(
        _ payload: ChangeSetPayload, state: ScopeState, token: UInt64, of handle: ScopeHandle,
        result: Result<Void, StoreError>,
        answer: @autoclosure () -> [UInt8], completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        switch result {
        case .success:
            let committedAt = ContinuousClock.now
            handle.runtime.withLock { runtime in
                guard runtime.committed.version < payload.version else {
                    // Already read back from a shared store and published (acceptCommitted).
                    runtime.staged.removeAll { $0.token == token }
                    return
                }
                runtime.didCommit(token: token)
                publish(payload.event, state: state, of: handle, runtime: &runtime)
            }
            configuration.observer?.didFanOut(after: ContinuousClock.now - committedAt)
            completion(.accepted(body: answer(), version: payload.version))
            if configuration.snapshotInterval > 0, payload.version % configuration.snapshotInterval == 0 {
                writeSnapshot(state, of: handle)
            }
        case .failure(let error):
            // Versions staged on this one leave with it (the store refuses them too: their parent
            // token is not its head); one staged since on the durable state stays.
            handle.runtime.withLock { $0.didFail(token: token) }
            completion(.rejected(storeFailure(error)))
        }
    }

    /// Makes `event` (a durable change set) the committed version and hands it to the
    /// subscribers; called with the scope's lock held, so a subscriber registering now is ordered
    /// before or after it.
    func publish(_ event: ScopeEvent, state: ScopeState, of handle: ScopeHandle, runtime: inout ScopeHandle.Runtime) {
        runtime.committed = state
        if runtime.tip.version < state.version { runtime.tip = state }
        runtime.recent.append(event)
        runtime.oldestResumable = max(runtime.oldestResumable, state.version - configuration.historyLimit)
        handle.subscribers.publish(event)
    }

    func writeSnapshot(_ state: ScopeState, of handle: ScopeHandle) {
        let store = self.store
        let logger = self.logger
        Task.detached(priority: .background) {
            do {
                try await store.writeSnapshot(
                    scope: handle.name, version: Int64(state.version),
                    snapshot: ScopeEncoding.snapshotJSON(state: state))
            } catch {
                logger.warning(
                    "snapshot failed",
                    metadata: ["scope": "\(handle.name)", "version": "\(state.version)", "error": "\(error)"])
            }
        }
    }
}
