/// Counters of the commit thread, for metrics and for tests that check that commits are shared.
///
/// ```swift
/// let stats = store.statistics
/// print("\(stats.committedOperations) operations in \(stats.committedTransactions) transactions")
/// ```
public struct StoreStatistics: Sendable, Hashable {
    /// Batches taken from the queue (committed or not).
    public var batches = 0
    /// Transactions that committed (each one fsync of the WAL).
    public var committedTransactions = 0
    /// Operations (appends, creations, snapshots …) in committed transactions, failed ones included.
    public var committedOperations = 0
    /// The most operations one transaction carried.
    public var largestBatch = 0

    public init() {}
}
