/// How long the observers' actor spent on each `changeset` event of the shared stream: the view's
/// update, the typed scope's application and the observers (docs/benchmarks.md, "Swift client").
/// Kept for the benchmark: a count, a sum and the first 65,536 samples.
@_spi(Benchmarks)
public struct EventTiming: Sendable {
    public private(set) var events = 0
    public private(set) var total: Duration = .zero
    /// The first samples, in arrival order.
    public private(set) var samples: [Duration] = []

    static let sampleLimit = 1 << 16

    public init() {}

    mutating func record(_ duration: Duration) {
        events += 1
        total += duration
        if samples.count < Self.sampleLimit { samples.append(duration) }
    }
}
