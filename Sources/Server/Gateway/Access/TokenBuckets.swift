import Synchronization

/// Token buckets by key (a client address or a token's subject), as a value: the caller passes
/// the time, so tests drive it with a manual clock. Each key refills `rate` tokens a second up to
/// `burst`; a request takes one.
///
/// ```swift
/// var buckets = TokenBuckets(rate: 10, burst: 20)
/// buckets.take("203.0.113.9", now: 0)   // .allowed
/// ```
public struct TokenBuckets: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        /// Refused; a token is back after this many whole seconds (at least 1), for `Retry-After`.
        case limited(retryAfter: Int)
    }

    struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    public let rate: Double
    public let burst: Double
    /// Keys beyond this are forgotten, full buckets first, so memory stays bounded.
    public let maxKeys: Int
    private(set) var buckets: [String: Bucket] = [:]

    public init(rate: Double, burst: Double, maxKeys: Int = 100_000) {
        self.rate = rate
        self.burst = max(1, burst)
        self.maxKeys = maxKeys
    }

    public var keyCount: Int { buckets.count }

    /// Takes one token from `key`'s bucket at time `now` (seconds, any epoch, non-decreasing).
    public mutating func take(_ key: String, now: Double) -> Decision {
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
        bucket.updated = now
        defer { buckets[key] = bucket }
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            if buckets[key] == nil, buckets.count >= maxKeys { prune(now: now) }
            return .allowed
        }
        let wait = (1 - bucket.tokens) / rate
        return .limited(retryAfter: max(1, Int(wait.rounded(.up))))
    }

    /// Drops buckets that have refilled completely (they behave exactly like absent ones), or all
    /// when none has.
    mutating func prune(now: Double) {
        buckets = buckets.filter { min(burst, $0.value.tokens + (now - $0.value.updated) * rate) < burst }
        if buckets.count >= maxKeys { buckets.removeAll(keepingCapacity: true) }
    }
}

/// Requests per second per client (`--rate-limit`, `--rate-burst`): thread-safe
/// ``TokenBuckets`` on the monotonic clock.
///
/// ```swift
/// let limiter = RateLimiter(rate: 50, burst: 100)
/// if case .limited(let seconds) = limiter.take("203.0.113.9") { /* 429, Retry-After: seconds */ }
/// ```
public final class RateLimiter: Sendable {
    private let buckets: Mutex<TokenBuckets>
    private let epoch = ContinuousClock.now

    public init(rate: Double, burst: Double) {
        buckets = Mutex(TokenBuckets(rate: rate, burst: burst))
    }

    public func take(_ key: String) -> TokenBuckets.Decision {
        let elapsed = (ContinuousClock.now - epoch).components
        let now = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        return buckets.withLock { $0.take(key, now: now) }
    }
}
