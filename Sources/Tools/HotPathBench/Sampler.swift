/// Times operations: a warm-up, a calibration that picks the batch size, then samples until a
/// sample count or a time budget is reached, whichever comes first (so every run is bounded).
struct Sampler {
    /// Untimed operations before measuring (caches, allocator, branch predictors).
    var warmUpOperations: Int
    /// The most samples taken per benchmark.
    var maxSamples: Int
    /// Sampling stops once this much time was spent in timed regions (at least `minSamples` taken).
    var budgetSeconds: Double
    var minSamples: Int
    /// A sample lasts at least about this long when the operation allows batching.
    var targetSampleNanos: Double = 2_000
    var maxBatch = 1_000

    static let full = Sampler(warmUpOperations: 2_000, maxSamples: 200_000, budgetSeconds: 1.5, minSamples: 1_000)
    static let quick = Sampler(warmUpOperations: 20, maxSamples: 300, budgetSeconds: 0.02, minSamples: 20)

    private let clock = ContinuousClock()

    func run(_ benchmark: MicroBenchmark) -> MicroResult {
        for _ in 0..<warmUpOperations {
            benchmark.setUp?()
            benchmark.operation()
        }
        let batch = benchmark.setUp == nil ? calibrateBatch(benchmark) : 1
        var samples: [Double] = []
        samples.reserveCapacity(min(maxSamples, 1 << 16))
        var spentNanos = 0.0
        let budgetNanos = budgetSeconds * 1e9
        while samples.count < maxSamples && (samples.count < minSamples || spentNanos < budgetNanos) {
            benchmark.setUp?()
            let start = clock.now
            for _ in 0..<batch { benchmark.operation() }
            let nanos = Self.nanoseconds(clock.now - start)
            spentNanos += nanos
            samples.append(nanos / Double(batch))
        }
        samples.sort()
        return MicroResult(
            benchmark: benchmark, samples: samples.count, batch: batch,
            p50Micros: Self.percentile(samples, 0.50) / 1e3, p99Micros: Self.percentile(samples, 0.99) / 1e3,
            meanMicros: spentNanos / Double(samples.count * batch) / 1e3)
    }

    /// Times 64 operations in a row and sizes batches to about ``targetSampleNanos``.
    private func calibrateBatch(_ benchmark: MicroBenchmark) -> Int {
        let probe = 64
        let start = clock.now
        for _ in 0..<probe { benchmark.operation() }
        let perOperation = max(1, Self.nanoseconds(clock.now - start) / Double(probe))
        return max(1, min(maxBatch, Int((targetSampleNanos / perOperation).rounded(.up))))
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    }

    /// Nearest-rank percentile of sorted samples.
    private static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}
