/// The timings of one ``MicroBenchmark``: per-operation percentiles over the samples (each sample
/// is the mean of `batch` consecutive operations) and the mean over every timed operation.
struct MicroResult {
    let benchmark: MicroBenchmark
    /// Timed samples.
    let samples: Int
    /// Operations per sample: 1 for slow operations, more for sub-microsecond ones so the clock's
    /// own cost (tens of nanoseconds a reading) stays a small part of each sample.
    let batch: Int
    let p50Micros: Double
    let p99Micros: Double
    let meanMicros: Double

    /// Operations timed in all.
    var operations: Int { samples * batch }
    var opsPerSecond: Double { 1e6 / meanMicros }
    /// Requests or events per second (``opsPerSecond`` times the items per operation).
    var itemsPerSecond: Double { opsPerSecond * Double(benchmark.itemsPerOp) }
    /// Megabytes (10^6 bytes) per second, or nil when the operation is not about bytes.
    var megabytesPerSecond: Double? {
        benchmark.bytesPerOp > 0 ? Double(benchmark.bytesPerOp) * opsPerSecond / 1e6 : nil
    }
}
