/// Exponential backoff with full jitter (docs/sync-protocol.md, R5): attempt n waits a uniformly
/// random time in [0, min(maximum, initial × 2ⁿ)).
///
/// ```swift
/// Backoff().delay(attempt: 3)   // somewhere in 0..<4 s
/// ```
public struct Backoff: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The ceiling of attempt `attempt`'s delay: min(maximum, initial × 2^attempt).
    public func ceiling(attempt: Int) -> Duration {
        let factor = 1 << min(max(attempt, 0), 30)
        return min(maximum, initial * factor)
    }

    /// A delay for attempt `attempt` (0-based), drawn with `random` in [0, 1).
    public func delay(attempt: Int, random: Double = Double.random(in: 0..<1)) -> Duration {
        ceiling(attempt: attempt) * random
    }
}
