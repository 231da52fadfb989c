import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

extension ScopeSync {
    /// Rules 2–5: sends pending sets in order, one in flight, each with its fixed key, until the
    /// sync stops. Woken by every local change and by a reset.
    func sendChanges(isolation: isolated any Actor) async {
        for await _ in senderWakeups {
            while !isStopped, let set = engine.nextToSend() {
                await send(set)
            }
        }
    }

    /// Statuses after which a set is refused for good (rule 4); any other is retried (rule 5).
    static let finalStatuses: Set<Int> = [400, 403, 404, 409, 412, 413, 415, 422]

    private func send(_ set: PendingChangeSet, isolation: isolated any Actor = #isolation) async {
        let body: JSONValue = ["fragments": .array(set.fragments.map(\.jsonValue))]
        let path = "/v1/scopes/\(Client.escaped(scope.name))/changesets"
        let answer: Client.Answer
        do {
            answer = try await client.request("POST", path, body: body, headers: ["Idempotency-Key": set.key])
        } catch {
            engine.retry(key: set.key)
            await backOff(retryAfter: nil)
            return
        }
        if isStopped { return }
        let status = answer.status
        if status == 200 {
            sendAttempt = 0
            let version = (try? JSONParser.parse(answer.body))?["version"]?.number?.int64Value
            show(engine.accepted(key: set.key, version: version.map { Int($0) } ?? Int.max))
        } else if Self.finalStatuses.contains(status) {
            sendAttempt = 0
            scope.flush()
            show(engine.rejected(key: set.key))
            report(Rejection(status: status, body: answer.body, key: set.key, fragments: set.fragments))
        } else {
            engine.retry(key: set.key)
            await backOff(retryAfter: answer.retryAfter)
        }
    }

    /// Waits before the next attempt: `Retry-After` seconds when given, else the backoff.
    private func backOff(retryAfter seconds: Int?, isolation: isolated any Actor = #isolation) async {
        let delay: Duration
        if let seconds, seconds > 0 {
            delay = .seconds(seconds)
        } else {
            delay = client.configuration.backoff.delay(attempt: sendAttempt)
            sendAttempt += 1
        }
        try? await Task.sleep(for: delay)
    }
}
