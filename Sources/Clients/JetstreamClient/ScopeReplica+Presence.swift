import Foundation
import JetstreamJSON

extension ScopeReplica {
    private var presencePath: String {
        "/v1/scopes/\(Client.escaped(name))/presence/\(Client.escaped(client.presenceID))"
    }

    /// The time ``OwnPresence`` is given: since the client was made.
    private var presenceNow: Duration { ContinuousClock.now - client.stream.origin }

    /// ``Presence/set(_:isolation:)``: queues `data` for the announcer and waits for its answer.
    func setPresence(_ data: JSONObject, isolation: isolated any Actor) async -> Result<Void, ClientError> {
        guard !isStopped else { return .failure(ClientError.invalidState("the sync of scope \(name) stopped")) }
        let generation = ownPresence.set(data)
        wakePresence.yield()
        return await withCheckedContinuation { waiter in presenceWaiters.append((generation, waiter)) }
    }

    /// Sends this client's presence: each new ``OwnPresence`` generation, and the refreshes (woken
    /// by ``refreshPresence(isolation:)``), one `PUT` at a time, until the sync stops. Nothing while
    /// the client is suspended: a set waits for the resume, which wakes this.
    func announcePresence(isolation: isolated any Actor) async {
        let ttl = client.configuration.presenceTTL
        let seconds = max(1, min(300, Int(ttl.components.seconds)))
        for await _ in presenceWakeups {
            while !isStopped, !isSuspended, let put = ownPresence.next(at: presenceNow, ttl: ttl) {
                let sentAt = presenceNow
                let answer = try? await client.request(
                    "PUT", presencePath, query: [URLQueryItem(name: "ttl", value: String(seconds))],
                    body: .object(put.data))
                let accepted = answer.map { (200..<300).contains($0.status) } ?? false
                ownPresence.answered(put.generation, accepted: accepted, sentAt: sentAt, at: presenceNow)
                let result: Result<Void, ClientError> =
                    switch answer {
                    case .some where accepted: .success(())
                    case let answer?: .failure(ClientError.refused(status: answer.status, problem: answer.body))
                    case nil: .failure(ClientError.unreachable("PUT \(presencePath): no answer"))
                    }
                settlePresenceWaiters(upTo: put.generation, result)
            }
        }
    }

    /// Wakes the announcer when a refresh is due (half the ttl after the last accepted `PUT` was
    /// sent). It sleeps until then, checking at least every eighth of the ttl, since a `PUT` or a
    /// set in between moves the moment. No refresh while the client is suspended (the server lets
    /// the presence expire; the resume sends it again when due).
    func refreshPresence(isolation: isolated any Actor) async {
        let ttl = client.configuration.presenceTTL
        let longest = max(ttl / 8, .milliseconds(100))
        while !isStopped && !Task.isCancelled {
            let wait = ownPresence.untilRefresh(at: presenceNow, ttl: ttl) ?? longest
            try? await Task.sleep(for: min(longest, max(wait, .milliseconds(20))))
            if !isSuspended && ownPresence.isRefreshDue(at: presenceNow, ttl: ttl) { wakePresence.yield() }
        }
    }

    /// The sync stopped: withdraws this client's presence (`DELETE`) when the server may hold it.
    func leavePresence(isolation: isolated any Actor) async {
        guard ownPresence.leave() else { return }
        _ = try? await client.request("DELETE", presencePath)
    }

    /// A `presence` event of this scope from the shared stream.
    func presenceEvent(_ json: JSONValue, isolation: isolated any Actor) {
        guard !isStopped, roster.apply(json) else { return }
        notifyPresence()
    }

    func notifyPresence() {
        let others = roster.members
        for (_, handler) in presenceHandlers { handler(others) }
    }

    func settlePresenceWaiters(upTo generation: Int, _ result: Result<Void, ClientError>) {
        let settled = presenceWaiters.filter { $0.generation <= generation }
        presenceWaiters.removeAll { $0.generation <= generation }
        for (_, waiter) in settled { waiter.resume(returning: result) }
    }
}
