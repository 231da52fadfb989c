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

/// Keeps `value` alive and opaque to the optimiser, so the work that produced it is not removed.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
