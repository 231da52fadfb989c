import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

extension ScopeReplica {
    /// How many of this client's own accepted change sets ``undo(isolation:)`` may still try.
    var undoableCount: Int { undoHistory.count }

    /// ``ScopeSync/undo(isolation:)``.
    func undo(isolation: isolated (any Actor) = #isolation) async throws(ClientError) -> UndoResult? {
        await waitUntilAnswered()
        var skipped: [UndoResult.Skipped] = []
        while true {
            guard !isStopped else { throw stoppedError }
            guard let target = undoHistory.next() else { return nil }
            let answer: Client.Answer
            do {
                answer = try await postWithKey(
                    "/v1/scopes/\(Client.escaped(scope.name))/changesets/\(target)/revert", body: nil,
                    key: "\(engine.clientID):undo:\(target)")
            } catch {
                undoHistory.putBack(target)
                throw error
            }
            let json = try? JSONParser.parse(answer.body)
            let type = json?["type"]?.string ?? ""
            switch answer.status {
            case 200:
                if let version = Self.newVersion(of: answer, json: json) {
                    _ = applyChangeSetEvent(answer.body)
                    return UndoResult(version: version, revertOf: target, skipped: skipped)
                }
                skipped.append(.init(version: target, reason: .unchanged))
            case 409 where type.hasSuffix("/revert-conflict"):
                skipped.append(.init(version: target, reason: .conflict))
            case 404 where type.hasSuffix("/version-not-found"), 410:
                undoHistory.gone(target)
                skipped.append(.init(version: target, reason: .gone))
            case 422:
                // The revert itself breaks a rule of the model (a limit, say): it never will apply.
                skipped.append(.init(version: target, reason: .refused))
            default:
                undoHistory.putBack(target)
                throw ClientError.refused(status: answer.status, problem: answer.body)
            }
        }
    }

    /// ``ScopeSync/restore(toVersion:isolation:)``.
    func restore(
        toVersion version: Int, isolation: isolated (any Actor) = #isolation
    ) async throws(ClientError) -> Int? {
        await waitUntilAnswered()
        let answer = try await postWithKey(
            "/v1/scopes/\(Client.escaped(scope.name))/restore", body: ["version": .number(JSONNumber(version))],
            key: "\(engine.clientID):restore:\(UUID().wireString)")
        guard answer.status == 200 else { throw ClientError.refused(status: answer.status, problem: answer.body) }
        guard let restored = Self.newVersion(of: answer, json: try? JSONParser.parse(answer.body)) else { return nil }
        undoHistory.accepted(restored)
        _ = applyChangeSetEvent(answer.body)
        return restored
    }

    // MARK: - Requests

    /// Waits until no local change set is queued or in flight (each is accepted or refused).
    func waitUntilAnswered(isolation: isolated (any Actor) = #isolation) async {
        // Local writes not yet delivered become pending sets first.
        scope.flush()
        while !isStopped, engine.pending.contains(where: { $0.status == .queued || $0.status == .inFlight }) {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in answerWaiters.append(waiter) }
        }
    }

    /// Wakes every ``waitUntilAnswered(isolation:)``: the sender settled a set, or the sync stopped.
    func wakeAnswerWaiters() {
        let waiters = answerWaiters
        answerWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// A POST with an `Idempotency-Key` through the client's request path, sent again with that key
    /// as ``SendRetry`` says (R6: a new token after a 401, `Retry-After`, backoff), at most
    /// ``postTries`` times. Returns the first final answer (200, a refusal, 410).
    private func postWithKey(
        _ path: String, body: JSONValue?, key: String, isolation: isolated (any Actor) = #isolation
    ) async throws(ClientError) -> Client.Answer {
        var retry = SendRetry()
        var tries = 0
        while true {
            tries += 1
            guard !isStopped else { throw stoppedError }
            let reply = try? await client.request(
                "POST", path, body: body, headers: ["Idempotency-Key": key], retryingUnauthorized: false)
            let problemType = reply.flatMap {
                $0.status == 409 ? (try? JSONParser.parse($0.body))?["type"]?.string : nil
            }
            let next = retry.answered(
                reply.map { .status($0.status, retryAfter: $0.retryAfter) } ?? .networkError, problemType: problemType)
            if let reply, next == .next || next == .rejected || reply.status == 410 { return reply }
            guard tries < Self.postTries else {
                if let reply { throw ClientError.refused(status: reply.status, problem: reply.body) }
                throw ClientError.unreachable("POST \(path): no answer after \(tries) tries")
            }
            switch next {
            case .backOff(let attempt):
                try? await Task.sleep(for: client.configuration.backoff.delay(attempt: attempt - 1))
            case .retryAfter(let seconds):
                try? await Task.sleep(for: .seconds(seconds))
            case .next, .rejected, .resendWithNewToken:
                // The request asks the token provider for every send.
                break
            }
        }
    }

    /// How often ``undo(isolation:)`` and ``restore(toVersion:isolation:)`` send their request
    /// before they give up (the same key each time).
    static var postTries: Int { 5 }

    /// The version a change-set answer made, nil when it changed nothing (no new version).
    private static func newVersion(of answer: Client.Answer, json: JSONValue?) -> Int? {
        let changed = !(json?["fragments"]?.array ?? []).isEmpty || !(json?["removed"]?.array ?? []).isEmpty
        guard changed else { return nil }
        return answer.version ?? json?["version"]?.number?.int64Value.map { Int($0) }
    }

    var stoppedError: ClientError {
        ClientError.invalidState("the sync of scope \(scope.name) was stopped")
    }
}
