/// One operation to time: what it is, how many bytes and items it handles, and the closures that
/// run it. Operations that need fresh input every time (an apply needs the next change set) give a
/// `setUp`, which runs untimed before each operation and forces a batch of 1.
struct MicroBenchmark {
    /// Stable key for `--json` and `--only`, e.g. `http1.parse.get`.
    let name: String
    /// The row label of the Markdown table.
    let summary: String
    /// Bytes read or written per operation (0 when bytes are not the point, e.g. apply).
    let bytesPerOp: Int
    /// Requests or events handled per operation (16 for a pipelined batch of 16 requests).
    let itemsPerOp: Int
    /// Untimed preparation before each operation; `nil` lets the sampler batch fast operations.
    let setUp: (() -> Void)?
    /// The timed work. It must hand its result to ``blackHole(_:)`` so the optimiser keeps it.
    let operation: () -> Void

    init(
        _ name: String, _ summary: String, bytesPerOp: Int, itemsPerOp: Int = 1, setUp: (() -> Void)? = nil,
        operation: @escaping () -> Void
    ) {
        self.name = name
        self.summary = summary
        self.bytesPerOp = bytesPerOp
        self.itemsPerOp = itemsPerOp
        self.setUp = setUp
        self.operation = operation
    }
}

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

/// Keeps `value` alive and opaque to the optimiser, so the work that produced it is not removed.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
