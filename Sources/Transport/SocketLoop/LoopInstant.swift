import CLinuxIO
import Glibc

/// A point on the monotonic clock, in nanoseconds. Loops read it once per wake-up, so deadlines
/// are coarse; state machines take it as a parameter, so tests drive them with any value.
public struct LoopInstant: Sendable, Hashable, Comparable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The monotonic clock now.
    public static func now() -> LoopInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return LoopInstant(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }

    /// This instant moved forward by `duration` (negative durations count as zero).
    public func advanced(by duration: Duration) -> LoopInstant {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return self }
        let nanos = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanos.partialValue.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        guard !nanos.overflow, !total.overflow else { return LoopInstant(nanoseconds: .max) }
        let sum = nanoseconds.addingReportingOverflow(total.partialValue)
        return LoopInstant(nanoseconds: sum.overflow ? .max : sum.partialValue)
    }

    public static func < (lhs: LoopInstant, rhs: LoopInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
