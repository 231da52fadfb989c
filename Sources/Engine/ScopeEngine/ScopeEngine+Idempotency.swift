import Foundation
import JetstreamModel
import Logging
import Store
import Synchronization

/// An idempotency key and the digest of its request, as stored with its first outcome
/// (``Store/IdempotencyRecord``). Keys are per scope and per authenticated subject: another
/// subject's request with the same key is a different key (it never replays or blocks someone
/// else's outcome). The client's key is echoed as `idempotencyKey` in the accepted answer and in
/// the `changeset` event, so a writer recognises its own change set in the stream.
///
/// The digest is the exact request body (after the target, when there is one), tagged `raw:` — not a hash. It exists to tell a true
/// retry from a key reused for another request; comparing the bytes themselves makes that exact
/// (no collision can be crafted) and needs no cryptography dependency. The price is storage: up
/// to the body limit per key for the idempotency TTL.
///
/// ```swift
/// let key = IdempotencyKey(key: "7f9c…", body: requestBody)
/// engine.submitOnce(changeSet, to: handle, idempotency: key) { outcome in … }
/// ```
public struct IdempotencyKey: Sendable {
    private static let digestTag = Array("raw:".utf8)

    /// The key as the client sent it.
    public let key: String
    /// The authenticated subject that sent it; nil for an anonymous request.
    public let subject: String?
    public let digest: [UInt8]
    /// When the client made the change set (`Idempotency-Key-Created`, ms since 1970), if it said:
    /// a set older than the records are kept is decided from the log (ScopeEngine+ExpiredKeys.swift).
    public let created: Int64?

    /// `target` names what the request applies to when the body alone does not (a merge patch's
    /// method and path): it is part of the digest, so the same key and body sent elsewhere is a
    /// reused key, never a replay of another request's outcome.
    public init(key: String, subject: String? = nil, target: String? = nil, body: [UInt8], created: Int64? = nil) {
        self.key = key
        self.subject = subject
        self.digest = Self.digestTag + (target.map { Array("\($0)\n".utf8) } ?? []) + body
        self.created = created
    }

    /// An `Idempotency-Key-Created` value (RFC 3339, as change sets' `at`) in ms since 1970.
    public static func createdMilliseconds(_ header: String) -> Int64? {
        ChangeTime.milliseconds(rfc3339: header.trimmingCharacters(in: .whitespaces))
    }

    /// The key under which the outcome is stored: `subject key` for a subject's key (a key is
    /// visible ASCII without spaces, so the last space splits it again and no two pairs meet),
    /// the bare key for an anonymous one.
    public var storageKey: String {
        guard let subject else { return key }
        return subject + " " + key
    }

    /// The record stored with the outcome (the store sets the version and time).
    func record(status: Int, response: [UInt8]) -> IdempotencyRecord {
        IdempotencyRecord(key: storageKey, requestDigest: digest, status: status, response: response)
    }
}

extension ScopeEngine {
    /// Submits a change set that carries an idempotency key: the first request with the key is
    /// applied and its outcome stored in the same durable commit as the change set (or, for a
    /// final rejection, with ``Store/ChangeLogStore/recordRejection(scope:_:completion:)``); a retry
    /// with the same body gets that outcome again (``SubmitOutcome/replayed(_:)``), one with
    /// another body ``ScopeError/idempotencyKeyReused(_:)``.
    ///
    /// Per scope and key only one request is decided at a time: a second one arriving while the
    /// first is still being validated or made durable gets ``ScopeError/idempotencyKeyInFlight(_:)``
    /// at once (never applied twice, and no request waits on another).
    public func submitOnce(
        _ changeSet: ChangeSet, to handle: ScopeHandle, ifMatch: VersionCondition? = nil,
        idempotency: IdempotencyKey, origin: ChangeOrigin = ChangeOrigin(),
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        if let error = Self.shapeError(changeSet, limits: configuration.limits) {
            return completion(.rejected(error))
        }
        submitOnce(
            Submission(.changeSet(changeSet), origin: origin), to: handle, ifMatch: ifMatch, idempotency: idempotency,
            completion: completion)
    }

    func submitOnce(
        _ submission: Submission, to handle: ScopeHandle, ifMatch: VersionCondition?, idempotency: IdempotencyKey,
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        // Before the key's lookup in the store, which would wait for its deadline first.
        if let refusal = outageRefusal() { return completion(refusal) }
        let key = idempotency.storageKey
        let registered = handle.runtime.withLock { $0.idempotencyInFlight.insert(key).inserted }
        guard registered else { return completion(.rejected(.idempotencyKeyInFlight(idempotency.key))) }
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
                return finish(.rejected(storeFailure(error)))
            }
            if stored == nil, let created = idempotency.created, isPastIdempotencyWindow(created: created) {
                return await decidePastWindow(
                    submission, to: handle, ifMatch: ifMatch, idempotency: idempotency, created: created,
                    finish: finish)
            }
            guard let stored else {
                return stage(submission, to: handle, ifMatch: ifMatch, idempotency: idempotency) { outcome in
                    guard case .rejected(.store(.idempotencyKeyExists)) = outcome else { return finish(outcome) }
                    // Another node decided the same key first (a shared store): its outcome stands.
                    Task { await self.answerFromStore(idempotency, of: handle, otherwise: outcome, finish: finish) }
                }
            }
            answer(idempotency, with: stored, finish: finish)
        }
    }

    /// Answers `idempotency` from its stored outcome when the store has one (true), before any
    /// work the outcome would make moot; false when the key is new, or the read failed (the
    /// request then goes through ``submitOnce(_:to:ifMatch:idempotency:completion:)``, which
    /// looks again under the key's in-flight guard).
    func answeredFromStore(
        _ idempotency: IdempotencyKey, of handle: ScopeHandle, completion: @Sendable (SubmitOutcome) -> Void
    ) async -> Bool {
        guard let stored = try? await store.idempotencyRecord(scope: handle.name, key: idempotency.storageKey) else {
            return false
        }
        answer(idempotency, with: stored, finish: completion)
        return true
    }

    /// A stored outcome answered again (same request) or the key refused (another request).
    private func answer(
        _ idempotency: IdempotencyKey, with stored: IdempotencyRecord, finish: @Sendable (SubmitOutcome) -> Void
    ) {
        if stored.requestDigest == idempotency.digest {
            configuration.observer?.didReplay()
            finish(.replayed(stored))
        } else {
            finish(.rejected(.idempotencyKeyReused(idempotency.key)))
        }
    }

    private func answerFromStore(
        _ idempotency: IdempotencyKey, of handle: ScopeHandle, otherwise outcome: SubmitOutcome,
        finish: @Sendable (SubmitOutcome) -> Void
    ) async {
        guard let stored = try? await store.idempotencyRecord(scope: handle.name, key: idempotency.storageKey) else {
            return finish(outcome)
        }
        answer(idempotency, with: stored, finish: finish)
    }

    /// A keyed set made before the idempotency window, with no record: applied once, answered
    /// from the log, or refused — never applied twice (ScopeEngine+ExpiredKeys.swift).
    private func decidePastWindow(
        _ submission: Submission, to handle: ScopeHandle, ifMatch: VersionCondition?, idempotency: IdempotencyKey,
        created: Int64, finish: @escaping @Sendable (SubmitOutcome) -> Void
    ) async {
        let decision: ExpiredKeyDecision
        do throws(StoreError) {
            decision = try await decideExpiredKey(idempotency, created: created, of: handle)
        } catch {
            return finish(.rejected(storeFailure(error)))
        }
        switch decision {
        case .apply:
            stage(submission, to: handle, ifMatch: ifMatch, idempotency: idempotency, completion: finish)
        case .applied(let record):
            configuration.observer?.didReplay()
            finish(.replayed(Self.replayedAnswer(record, for: idempotency)))
        case .unknowable(let oldest):
            let refusal = ScopeError.idempotencyWindowPassed(
                key: idempotency.key, created: created, oldestLogged: oldest,
                windowMilliseconds: configuration.idempotencyTTLMilliseconds)
            recordRejection(refusal, idempotency: idempotency, of: handle, completion: finish)
        }
    }

    /// Stores a final rejection under its key, then answers it (the answer does not wait on a
    /// store failure: the rejection stands, only its replay is lost).
    func recordRejection(
        _ error: ScopeError, idempotency: IdempotencyKey, of handle: ScopeHandle,
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        let encoded = configuration.encodeRejection(error)
        let logger = self.logger
        store.recordRejection(scope: handle.name, idempotency.record(status: encoded.status, response: encoded.body)) {
            result in
            if case .failure(let failure) = result {
                logger.warning(
                    "idempotency record not stored", metadata: ["scope": "\(handle.name)", "error": "\(failure)"])
            }
            completion(.rejected(error))
        }
    }
}
