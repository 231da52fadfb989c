import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

extension ScopeReplica {
    /// L2 and R6: sends pending sets in order, one in flight, each with its fixed key, until the
    /// sync stops. Woken by every local change, by a reset and by a resume: while the client is
    /// suspended the sets wait (a set already on its way gets its answer).
    func sendChanges(isolation: isolated any Actor) async {
        for await _ in senderWakeups {
            while !isStopped, !isSuspended, let set = engine.nextToSend() {
                await send(set)
                wakeAnswerWaiters()
            }
        }
    }

    private func send(_ set: PendingChangeSet, isolation: isolated any Actor = #isolation) async {
        var body: JSONValue = ["fragments": .array(set.fragments.map(\.jsonValue))]
        var path = "/v1/scopes/\(Client.escaped(scope.name))/changesets"
        if let method = set.method {
            body = ["args": method.args]
            path = "/v1/scopes/\(Client.escaped(scope.name))/methods/\(Client.escaped(method.name))"
        }
        var answer: SendRetry.Answer = .networkError
        var methodFailureStatus: Int?
        var answerBody: [UInt8] = []
        var acceptedVersion: Int?
        // A 401 is the send policy's to judge (a new token, then the same set at once), not
        // retried inside the request.
        var headers = ["Idempotency-Key": set.key]
        if let created = set.created { headers["Idempotency-Key-Created"] = created }
        if let reply = try? await client.request(
            "POST", path, body: body, headers: headers, retryingUnauthorized: false)
        {
            answer = .status(reply.status, retryAfter: reply.retryAfter)
            answerBody = reply.body
            acceptedVersion = reply.version
        }
        if isStopped { return }
        if set.method != nil, case .status(let status, _) = answer, status == 502 || status == 504 {
            // The method (or its service) failed: final for this call, not retried behind the queue.
            answer = .status(422, retryAfter: nil)
            methodFailureStatus = status
        }
        // A 409's type tells a refusal from a key still being decided (R6).
        var problemType: String?
        if case .status(409, _) = answer { problemType = (try? JSONParser.parse(answerBody))?["type"]?.string }
        switch sendRetry.answered(answer, problemType: problemType) {
        case .next:
            // The ETag names the version (`"42"`); the body is read only when a proxy dropped it.
            let version =
                acceptedVersion
                ?? (try? JSONParser.parse(answerBody))?["version"]?.number?.int64Value.map { Int($0) }
            if let method = set.method {
                let answered = Self.methodAnswer(method.name, body: answerBody, version: version)
                settleCall(set.key, .answered(answered))
                if !answered.changed {
                    // Nothing changed on the server: the stub's edits leave, no version to wait for.
                    scope.flush()
                    show(engine.rejected(key: set.key))
                    storeFinished(key: set.key)
                    return
                }
            }
            if let version {
                undoHistory.accepted(version)
                storeAccepted(key: set.key, version: version)
            }
            show(engine.accepted(key: set.key, version: version ?? Int.max))
        case .rejected:
            guard case .status(var status, _) = answer else { return }
            status = methodFailureStatus ?? status
            scope.flush()
            show(engine.rejected(key: set.key))
            storeFinished(key: set.key)
            let rejection = Rejection(status: status, body: answerBody, key: set.key, fragments: set.fragments)
            report(rejection)
            if set.method != nil {
                settleCall(
                    set.key, .failed(.refused(status: status, detail: rejection.detail ?? rejection.reasons.joined())))
            }
        case .resendWithNewToken:
            // The request asks the token provider for every send.
            engine.retry(key: set.key)
        case .backOff(let attempt):
            engine.retry(key: set.key)
            await waitOutSendBackoff(client.configuration.backoff.delay(attempt: attempt - 1))
        case .retryAfter(let seconds):
            engine.retry(key: set.key)
            try? await Task.sleep(for: .seconds(seconds))
        }
    }
}
