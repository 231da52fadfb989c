import Synchronization

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
