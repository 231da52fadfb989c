import CSQLite
import Logging

/// The writer side of ``SQLiteStore``: runs one batch of queued operations per transaction, each under
/// its own savepoint, commits once (one fsync of the WAL), then completes every operation of the batch.
///
/// Lives on the commit thread that created it and is never touched by another thread.
final class SQLiteWriter {
    let connection: SQLiteConnection
    let configuration: SQLiteStore.Configuration
    let logger: Logger
    /// Scopes whose log may have grown past the retention bound (ids; a hint, pruned in small chunks).
    var retentionDue: Set<Int64> = []
    private var lastExpiryMilliseconds: Int64 = 0
    /// The lineage token of each scope's latest logged version (``AppendRequest/token``), by scope
    /// id, as committed; `batchHeads` holds what the open transaction changed. Kept in memory: a
    /// pipeline never outlives the process, so after a restart no head is known and only appends
    /// without a parent token (the first after recovery) are accepted.
    private var heads: [Int64: UInt64] = [:]
    var batchHeads: [Int64: UInt64] = [:]
    /// Names untokened versions: no parent token ever matches it.
    private var untokenedHeads: UInt64 = 1 << 63

    init(path: String, configuration: SQLiteStore.Configuration, logger: Logger) throws(StoreError) {
        self.connection = try SQLiteConnection(path: path)
        self.configuration = configuration
        self.logger = logger
        try SQLiteSchema.prepare(connection)
        connection.trackWALSize()
        lastExpiryMilliseconds = configuration.clock()
    }

    /// Commits `batch` in one transaction and completes its operations after COMMIT returned. `counted`
    /// learns whether it committed before any completion runs, so counters never lag an answer.
    func commit(_ batch: [WriteOperation], counted: (_ committed: Bool) -> Void) {
        do throws(StoreError) {
            try connection.statement("BEGIN IMMEDIATE").run()
        } catch {
            counted(false)
            for operation in batch { operation.fail(error) }
            return
        }
        var finishers: [(StoreError?) -> Void] = []
        finishers.reserveCapacity(batch.count)
        for operation in batch {
            guard connection.inTransaction else {
                // SQLite rolled the whole transaction back (I/O error, disk full): nothing more may run in it.
                finishers.append { _ in
                    operation.fail(.sqlite(operation: "batch", code: SQLITE_ABORT, message: "transaction rolled back"))
                }
                continue
            }
            finishers.append(perform(operation))
        }
        if connection.inTransaction { runMaintenanceStep() }
        do throws(StoreError) {
            guard connection.inTransaction else {
                throw .sqlite(operation: "COMMIT", code: SQLITE_ABORT, message: "transaction was rolled back")
            }
            try connection.statement("COMMIT").run()
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            batchHeads.removeAll(keepingCapacity: true)
            logger.error("store commit failed", metadata: ["error": "\(error)", "operations": "\(batch.count)"])
            counted(false)
            for finish in finishers { finish(error) }
            return
        }
        heads.merge(batchHeads) { _, new in new }
        batchHeads.removeAll(keepingCapacity: true)
        counted(true)
        for finish in finishers { finish(nil) }
        if connection.walFrameCount >= configuration.checkpointFrames { checkpoint(mode: "PASSIVE") }
    }

    /// Copies the WAL back into the database file so that it does not grow without bound. Runs after the
    /// batch's writers were answered, so it delays the next batch rather than an acknowledged one.
    func checkpoint(mode: String) {
        do throws(StoreError) {
            try connection.execute("PRAGMA wal_checkpoint(\(mode))")
        } catch {
            logger.warning("store checkpoint failed", metadata: ["error": "\(error)"])
        }
    }

    /// Runs `body` under a savepoint: on failure only its own changes are rolled back.
    func inSavepoint<Value>(_ body: () throws(StoreError) -> Value) -> Result<Value, StoreError> {
        do throws(StoreError) {
            try connection.statement("SAVEPOINT operation").run()
        } catch {
            return .failure(error)
        }
        do throws(StoreError) {
            let value = try body()
            try connection.statement("RELEASE operation").run()
            return .success(value)
        } catch {
            if connection.inTransaction {
                try? connection.statement("ROLLBACK TO operation").run()
                try? connection.statement("RELEASE operation").run()
            }
            return .failure(error)
        }
    }

    private func perform(_ operation: WriteOperation) -> (StoreError?) -> Void {
        switch operation {
        case .append(let request, let completion):
            let result = inSavepoint { () throws(StoreError) in try append(request) }
            if case .success(let scopeID) = result {
                if request.token != 0 {
                    batchHeads[scopeID] = request.token
                } else {
                    untokenedHeads += 1
                    batchHeads[scopeID] = untokenedHeads
                }
            }
            return finisher(result.map { _ in () }, completion)
        case .recordRejection(let scope, let record, let completion):
            return finisher(
                inSavepoint { () throws(StoreError) in try recordRejection(scope: scope, record) }, completion)
        case .createScope(let descriptor, let snapshot, let completion):
            return finisher(
                inSavepoint { () throws(StoreError) in try createScope(descriptor, snapshot: snapshot) }, completion)
        case .deleteScope(let name, let completion):
            return finisher(inSavepoint { () throws(StoreError) in try deleteScope(name) }, completion)
        case .writeMetadata(let key, let value, let completion):
            return finisher(
                inSavepoint { () throws(StoreError) in
                    if let value {
                        try connection.statement("INSERT OR REPLACE INTO metadata(key, value) VALUES(?1, ?2)")
                            .bind(key, value).run()
                    } else {
                        try connection.statement("DELETE FROM metadata WHERE key = ?1").bind(key).run()
                    }
                }, completion)
        case .writeSnapshot(let scope, let version, let snapshot, let completion):
            return finisher(
                inSavepoint { () throws(StoreError) in
                    try writeSnapshot(scope: scope, version: version, snapshot: snapshot)
                }, completion)
        case .applyRetention(let completion):
            return finisher(inSavepoint { () throws(StoreError) in try applyRetention() }, completion)
        case .expireIdempotencyRecords(let completion):
            return finisher(
                inSavepoint { () throws(StoreError) in try expireIdempotencyRecords(limit: Int.max) }, completion)
        }
    }

    /// The lineage token of a scope's latest logged version, as this transaction sees it (nil or
    /// 0: unknown).
    func head(of scopeID: Int64) -> UInt64? {
        batchHeads[scopeID] ?? heads[scopeID]
    }

    /// What to do once the transaction's fate is known: a failed COMMIT fails even operations that ran.
    private func finisher<Value>(
        _ result: Result<Value, StoreError>, _ completion: @escaping WriteOperation.Completion<Value>
    ) -> (StoreError?) -> Void {
        { commitError in completion(commitError.map { .failure($0) } ?? result) }
    }

    /// Background retention and key expiry, bounded per batch so that an append never waits long for it.
    private func runMaintenanceStep() {
        let now = configuration.clock()
        let result = inSavepoint { () throws(StoreError) in
            var budget = configuration.retentionChunk
            while budget > 0, let scopeID = retentionDue.first {
                let (deleted, done) = try pruneScope(id: scopeID, budget: budget)
                budget -= deleted
                if done { retentionDue.remove(scopeID) }
            }
            if now - lastExpiryMilliseconds >= configuration.idempotencyExpiryIntervalMilliseconds {
                let expired = try expireIdempotencyRecords(limit: configuration.retentionChunk)
                if expired < configuration.retentionChunk { lastExpiryMilliseconds = now }
            }
        }
        if case .failure(let error) = result {
            logger.warning("store maintenance step failed", metadata: ["error": "\(error)"])
        }
    }
}
