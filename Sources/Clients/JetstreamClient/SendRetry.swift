/// What the sender does after the answer to the change set in flight (docs/sync-protocol.md,
/// "Sending"). Pure: no I/O, no clock.
///
/// ```
///   200 ─────────────────────────────▶ next (the backoff starts over)
///   400 403 404 409 412 413 415 422 ─▶ rejected (dropped, reported)
///   401 ─────────────────────────────▶ resend with a new token at once; a second 401 in a row ─▶ backoff k
///   network error · 5xx · 429 … ─────▶ Retry-After s when given, else backoff k = 1, 2, …
/// ```
struct SendRetry: Sendable, Equatable {
    /// The answer to a `POST …/changesets`.
    enum Answer: Sendable, Equatable {
        case status(Int, retryAfter: Int?)
        case networkError
    }

    enum Next: Sendable, Equatable {
        /// Accepted: go on with the next set.
        case next
        /// Refused for good: drop the set and tell the application.
        case rejected
        /// Ask the token provider again and send the same set at once.
        case resendWithNewToken
        /// Wait `Backoff.delay(attempt: attempt - 1)`, then send the same set with its key.
        case backOff(attempt: Int)
        /// Wait the server's `Retry-After`, then send the same set with its key.
        case retryAfter(seconds: Int)
    }

    /// Statuses after which a set is refused for good; any other is retried with its key (the
    /// server replays the first outcome of a key, so a retry never applies a set twice). A `409`
    /// whose problem is `idempotency-key-in-flight` is not a refusal (see `answered`).
    static let finalStatuses: Set<Int> = [400, 403, 404, 409, 412, 413, 415, 422]

    private var attempt = 0
    private var lastWasUnauthorized = false

    mutating func answered(_ answer: Answer, problemType: String? = nil) -> Next {
        if case .status(409, let retryAfter) = answer, problemType?.hasSuffix("/idempotency-key-in-flight") == true {
            // The same key is still being decided — an earlier attempt whose answer was lost: not a
            // refusal; asked again after its Retry-After (1 s when it gives none).
            lastWasUnauthorized = false
            return .retryAfter(seconds: max(1, retryAfter ?? 1))
        }
        var unauthorized = false
        if case .status(401, _) = answer { unauthorized = true }
        defer { lastWasUnauthorized = unauthorized }
        switch answer {
        case .status(200, _):
            attempt = 0
            return .next
        case .status(let status, _) where Self.finalStatuses.contains(status):
            attempt = 0
            return .rejected
        case .status(401, _) where !lastWasUnauthorized:
            return .resendWithNewToken
        case .status(401, _):
            // The new token was refused too: back off (a Retry-After on a 401 is not the
            // server asking for time, it is the token).
            attempt += 1
            return .backOff(attempt: attempt)
        case .status(_, let retryAfter?) where retryAfter > 0:
            return .retryAfter(seconds: retryAfter)
        case .status, .networkError:
            attempt += 1
            return .backOff(attempt: attempt)
        }
    }

    /// A reset or snapshot queues the unacknowledged sets again: they go at once.
    mutating func startOver() {
        attempt = 0
        lastWasUnauthorized = false
    }
}
