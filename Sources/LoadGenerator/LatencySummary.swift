import Histogram

/// Percentiles of one latency distribution, recorded in microseconds in an HdrHistogram
/// (3 significant digits) and reported in milliseconds.
public struct LatencySummary: Sendable {
    private var histogram = Histogram<UInt64>(
        highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)

    public init() {}

    public var count: UInt64 { histogram.totalCount }

    public mutating func record(nanoseconds: UInt64) {
        _ = histogram.record(max(1, nanoseconds / 1000))
    }

    public mutating func merge(_ other: LatencySummary) {
        histogram.add(other.histogram)
    }

    /// The value at `percentile` (0–100) in milliseconds.
    public func milliseconds(atPercentile percentile: Double) -> Double {
        count == 0 ? 0 : Double(histogram.valueAtPercentile(percentile)) / 1000
    }

    public var maxMilliseconds: Double { count == 0 ? 0 : Double(histogram.max) / 1000 }
    public var meanMilliseconds: Double { count == 0 ? 0 : histogram.mean / 1000 }

    /// p50, p90, p99, p99.9, max and mean, the keys the JSON report uses.
    public var report: [(key: String, milliseconds: Double)] {
        [
            ("p50", milliseconds(atPercentile: 50)), ("p90", milliseconds(atPercentile: 90)),
            ("p99", milliseconds(atPercentile: 99)), ("p999", milliseconds(atPercentile: 99.9)),
            ("max", maxMilliseconds), ("mean", meanMilliseconds),
        ]
    }
}
