import Dispatch
import Glibc
import Logging

/// The embedded ``ChangeLogStore``: one SQLite file in WAL mode with `synchronous=FULL`.
///
/// Writes (appends, creations, deletions, snapshots, retention) go through a queue to one commit thread
/// that owns the writer connection and commits whatever is queued as one transaction — concurrent writers
/// share one fsync (group commit) and are completed after COMMIT returned. Reads use a few other
/// connections, each under a mutex; WAL lets them run while the commit thread writes.
///
/// Sendable because every piece of mutable state is confined: the queue and counters behind `Mutex`es,
/// the writer connection to its thread, each reader connection to its mutex.
///
/// ```swift
/// let store = try SQLiteStore(path: "data/store.sqlite")
/// let v0 = try await store.createScope(ScopeDescriptor(name: "a", rootClass: "Canvas", rootUUID: id), snapshot: s)
/// store.append(AppendRequest(scope: "a", version: v0 + 1, payload: bytes)) { result in answer(result) }
/// ```
public final class SQLiteStore: ChangeLogStore {
    public let path: String
    public let configuration: Configuration
    let logger: Logger
    private let queue = CommitQueue<WriteOperation>()
    private let commitThread: CommitThread
    let readers: ReaderPool
    /// Held while open: one process per store file.
    private let lock: StoreLock

    /// Opens (creating if needed) the store at `path`; SQLite replays a WAL left by a crash on open.
    public init(
        path: String, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "jetstream.store")
    ) throws(StoreError) {
        self.path = path
        self.configuration = try configuration.validated()
        self.logger = logger
        lock = try StoreLock(storePath: path)
        // A missing file is a new store; an empty one is not (a truncated copy, a failed restore):
        // SQLite would quietly begin an empty store in it.
        var status = stat()
        if stat(path, &status) == 0, status.st_size == 0 {
            throw .corrupt(
                path: path, message: "the file is empty (0 bytes), not a store: restore it, or remove it to start anew")
        }
        commitThread = try CommitThread(path: path, configuration: configuration, queue: queue, logger: logger)
        do throws(StoreError) {
            readers = try ReaderPool(path: path, count: configuration.readerConnections)
        } catch {
            queue.close()
            commitThread.join()
            throw error
        }
    }

    deinit { close() }

    /// Finishes the queued writes, checkpoints the WAL into the database file and closes both connections.
    public func close() {
        queue.close()
        commitThread.join()
        readers.close()
        lock.release()
    }

    /// Counters of the commit thread (transactions, operations, largest batch).
    public var statistics: StoreStatistics { commitThread.currentStatistics }

    /// Operations queued and not yet taken by the commit thread.
    public var pendingOperationCount: Int { queue.pendingCount }

    /// Holds the commit thread before its next batch (queued writes wait) — for tests of group commit
    /// and for maintenance windows. ``resumeCommits()`` releases it.
    public func pauseCommits() { queue.setPaused(true) }

    /// Releases ``pauseCommits()``: everything queued meanwhile commits in as few transactions as the
    /// batch size allows.
    public func resumeCommits() { queue.setPaused(false) }

    func submit(_ operation: WriteOperation) {
        // Never on the caller's thread: callers append while holding their own locks.
        if !queue.enqueue(operation) { DispatchQueue.global().async { operation.fail(.closed) } }
    }

    // MARK: - Writes

    public func append(_ request: AppendRequest, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        submit(.append(request, completion))
    }

    public func recordRejection(
        scope: String, _ record: IdempotencyRecord, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void
    ) {
        submit(.recordRejection(scope: scope, record, completion))
    }

    public func createScope(_ scope: ScopeDescriptor, snapshot: [UInt8]) async throws(StoreError) -> Int64 {
        try await perform { .createScope(scope, snapshot: snapshot, $0) }
    }

    public func deleteScope(named name: String) async throws(StoreError) -> Int64 {
        try await perform { .deleteScope(name, $0) }
    }

    public func writeSnapshot(scope: String, version: Int64, snapshot: [UInt8]) async throws(StoreError) {
        try await perform { .writeSnapshot(scope: scope, version: version, snapshot: snapshot, $0) }
    }

    public func writeMetadata(key: String, value: [UInt8]?) async throws(StoreError) {
        try await perform { .writeMetadata(key: key, value: value, $0) }
    }

    public func applyRetention() async throws(StoreError) -> Int {
        try await perform { .applyRetention($0) }
    }

    public func expireIdempotencyRecords() async throws(StoreError) -> Int {
        try await perform { .expireIdempotencyRecords($0) }
    }

    private func perform<Value: Sendable>(
        _ operation: (@escaping WriteOperation.Completion<Value>) -> WriteOperation
    ) async throws(StoreError) -> Value {
        let result = await withCheckedContinuation { continuation in
            submit(operation { continuation.resume(returning: $0) })
        }
        return try result.get()
    }
}
