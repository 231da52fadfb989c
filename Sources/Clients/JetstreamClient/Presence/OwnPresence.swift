import JetstreamJSON

/// What this client announces in one scope and how far the announcements got: the data of the last
/// ``set(_:)``, the `PUT`s that carried it, and when the next one is due: half the ttl after a `PUT`
/// the server accepted was sent (the server counts the ttl from when it received the `PUT`, never
/// earlier, so a member never expires while its client runs), an eighth of it (at least a second)
/// after one that failed or was refused was answered. Pure: the caller gives the time as a duration
/// since an origin of its choosing.
///
/// ```swift
/// var own = OwnPresence()
/// let generation = own.set(["x": 1])
/// let put = own.next(at: .zero, ttl: .seconds(30))!          // PUT put.data
/// own.answered(put.generation, accepted: true, sentAt: .zero, at: .milliseconds(40))
/// own.next(at: .seconds(14), ttl: .seconds(30))               // nil
/// own.next(at: .seconds(15), ttl: .seconds(30))               // the same data again: a refresh
/// ```
struct OwnPresence: Sendable {
    /// The data to announce; nil before the first ``set(_:)`` and after ``leave()``.
    private(set) var data: JSONObject?
    /// Counts ``set(_:)`` calls: a `PUT` answers every set up to the generation it carried.
    private(set) var generation = 0
    private(set) var answeredGeneration = 0
    /// When the refresh timer of the last `PUT` starts (when it was sent if the server accepted it,
    /// when it was answered otherwise), and whether the server accepted it.
    private(set) var lastAnswer: (at: Duration, accepted: Bool)?

    /// New data to announce; returns its generation.
    mutating func set(_ data: JSONObject) -> Int {
        self.data = data
        generation += 1
        return generation
    }

    /// The `PUT` to send now, if any: data not sent yet, or a refresh that is due.
    func next(at now: Duration, ttl: Duration) -> (data: JSONObject, generation: Int)? {
        guard let data else { return nil }
        if generation > answeredGeneration || isRefreshDue(at: now, ttl: ttl) { return (data, generation) }
        return nil
    }

    /// Half the ttl after an accepted `PUT` was sent, an eighth (at least a second) after another
    /// answer.
    func isRefreshDue(at now: Duration, ttl: Duration) -> Bool {
        guard let wait = untilRefresh(at: now, ttl: ttl) else { return false }
        return wait <= .zero
    }

    /// How long until the refresh is due (zero or less: due now); nil when none will be.
    func untilRefresh(at now: Duration, ttl: Duration) -> Duration? {
        guard data != nil, let lastAnswer else { return nil }
        let interval = lastAnswer.accepted ? ttl / 2 : max(ttl / 8, .seconds(1))
        return lastAnswer.at + interval - now
    }

    /// The answer to the `PUT` that carried `generation`, sent at `sentAt`: accepted, or refused /
    /// not answered at `now` (the sets up to it are answered all the same; a refresh tries again).
    mutating func answered(_ generation: Int, accepted: Bool, sentAt: Duration, at now: Duration) {
        answeredGeneration = max(answeredGeneration, generation)
        lastAnswer = (accepted ? sentAt : now, accepted)
    }

    /// Stops announcing; true when the server may still hold this client (a `DELETE` is due).
    mutating func leave() -> Bool {
        defer {
            data = nil
            lastAnswer = nil
        }
        return lastAnswer != nil
    }
}
