/// What every `jetstream bench` mode shares: where to send the load and how to bound it.
public struct BenchSettings: Sendable {
    public var target: BenchTarget
    /// Client loops (threads) carrying subscribers or connections.
    public var threads: Int
    public var sources: SourceAddresses
    /// A hard bound on the whole run, set-up included.
    public var timeoutSeconds: Double
    /// Receives a one-line status about once a second (stderr in the CLI).
    public var progress: @Sendable (String) -> Void

    public init(
        target: BenchTarget, threads: Int, sources: SourceAddresses, timeoutSeconds: Double,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.target = target
        self.threads = max(1, threads)
        self.sources = sources
        self.timeoutSeconds = timeoutSeconds
        self.progress = progress
    }

    /// The absolute CLOCK_MONOTONIC deadline of a run starting now.
    func deadline(from start: UInt64) -> UInt64 {
        start + UInt64(max(0, timeoutSeconds) * 1e9)
    }
}
