import Dispatch
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The dedicated thread that owns the writer connection: it drains the ``CommitQueue`` batch by batch,
/// one transaction and one fsync per batch, so concurrent writers share a commit (group commit).
final class CommitThread: Sendable {
    private let queue: CommitQueue<WriteOperation>
    private let startup = Mutex<Result<Void, StoreError>?>(nil)
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let statistics = Mutex(StoreStatistics())
    private let threadID = Mutex<pthread_t?>(nil)

    /// Starts the thread and waits until it has opened (and if needed created) the database.
    init(
        path: String, configuration: SQLiteStore.Configuration, queue: CommitQueue<WriteOperation>, logger: Logger
    ) throws(StoreError) {
        self.queue = queue
        let thread = Thread { [self] in
            self.run(path: path, configuration: configuration, logger: logger)
        }
        thread.name = "jetstream-store-commit"
        thread.start()
        started.wait()
        if case .failure(let error) = startup.withLock({ $0 }) {
            finished.wait()
            throw error
        }
    }

    var currentStatistics: StoreStatistics { statistics.withLock { $0 } }

    /// Waits until the thread has committed everything queued before the queue was closed and exited.
    func join() {
        // A completion that drops the last reference to the store runs on this thread: it cannot wait for
        // itself; the loop ends by itself once it has drained the closed queue.
        if let commitThread = threadID.withLock({ $0 }), pthread_equal(commitThread, pthread_self()) != 0 { return }
        finished.wait()
        finished.signal()
    }

    private func run(path: String, configuration: SQLiteStore.Configuration, logger: Logger) {
        defer { finished.signal() }
        threadID.withLock { $0 = pthread_self() }
        let writer: SQLiteWriter
        do throws(StoreError) {
            writer = try SQLiteWriter(path: path, configuration: configuration, logger: logger)
            startup.withLock { $0 = .success(()) }
            started.signal()
        } catch {
            startup.withLock { $0 = .failure(error) }
            started.signal()
            return
        }
        while let batch = queue.takeBatch(limit: configuration.maximumBatchSize) {
            writer.commit(batch) { committed in
                statistics.withLock { statistics in
                    statistics.batches += 1
                    if committed {
                        statistics.committedTransactions += 1
                        statistics.committedOperations += batch.count
                        statistics.largestBatch = max(statistics.largestBatch, batch.count)
                    }
                }
            }
        }
        writer.checkpoint(mode: "TRUNCATE")
    }
}

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
