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
        let body: JSONValue = ["fragments": .array(set.fragments.map(\.jsonValue))]
        let path = "/v1/scopes/\(Client.escaped(scope.name))/changesets"
        var answer: SendRetry.Answer = .networkError
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
        switch sendRetry.answered(answer) {
        case .next:
            // The ETag names the version (`"42"`); the body is read only when a proxy dropped it.
            let version =
                acceptedVersion
                ?? (try? JSONParser.parse(answerBody))?["version"]?.number?.int64Value.map { Int($0) }
            if let version {
                undoHistory.accepted(version)
                storeAccepted(key: set.key, version: version)
            }
            show(engine.accepted(key: set.key, version: version ?? Int.max))
        case .rejected:
            guard case .status(let status, _) = answer else { return }
            scope.flush()
            show(engine.rejected(key: set.key))
            storeFinished(key: set.key)
            report(Rejection(status: status, body: answerBody, key: set.key, fragments: set.fragments))
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
