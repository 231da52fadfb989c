import Foundation
import Logging
import Store
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One writer connection and the thread that owns it: it takes whatever its queue holds and commits
/// it as one transaction in one round trip (pipeline mode: `BEGIN`, one function call per
/// operation, `COMMIT`, then the notification for the other nodes), and completes each operation
/// once `COMMIT` has returned — with `synchronous_commit = on`, after the WAL flush.
///
/// The notification is its own transaction after the data commit, sent with
/// `synchronous_commit = off`: `NOTIFY` takes a cluster-wide lock through its commit, and inside
/// the data transaction it would serialise every node's commits behind one fsync at a time. A lost
/// notification costs at most one poll interval, never a change set.
final class PostgresWriter: Sendable {
    let queue = CommitQueue<WriteOperation>()
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)

    init(
        index: Int, target: PGTarget, configuration: PostgresStore.Configuration, statistics: PostgresCounters,
        logger: Logger
    ) {
        let thread = Thread { [self] in
            defer { finished.signal() }
            threadID.withLock { $0 = pthread_self() }
            let session = WriterSession(
                target: target, configuration: configuration, statistics: statistics, logger: logger,
                name: "\(configuration.applicationName)-writer-\(index)")
            // Connected before the first write needs it (a failure here is retried by that write).
            _ = try? session.connected()
            while let (batch, oldest) = queue.takeBatchWithAge(limit: configuration.maximumBatchSize) {
                // A write waits at most `unavailableAfter` in all: queued, then connecting and
                // in its round trip (`WriteWaitBound` looks after it only while it is queued).
                session.commit(batch, until: oldest + configuration.unavailableAfter)
            }
            session.disconnect()
        }
        thread.name = "jetstream-pg-writer-\(index)"
        thread.start()
    }

    /// Refuses new operations, commits those queued and waits for the thread to end.
    func close() {
        queue.close()
        // A completion that drops the last reference to the store runs on this thread: it cannot
        // wait for itself; the loop ends by itself once it has drained the closed queue.
        if let writer = threadID.withLock({ $0 }), pthread_equal(writer, pthread_self()) != 0 { return }
        finished.wait()
        finished.signal()
    }
}

/// The writer thread's state: its connection (made on demand, dropped after a failure).
private final class WriterSession {
    let target: PGTarget
    let configuration: PostgresStore.Configuration
    let statistics: PostgresCounters
    let logger: Logger
    let name: String
    var connection: PGConnection?
    var everConnected = false

    init(
        target: PGTarget, configuration: PostgresStore.Configuration, statistics: PostgresCounters,
        logger: Logger, name: String
    ) {
        self.target = target
        self.configuration = configuration
        self.statistics = statistics
        self.logger = logger
        self.name = name
    }

    /// The connection, made now if there is none (connecting and preparing by `deadline` when
    /// given, else within the answer timeout).
    func connected(until deadline: ContinuousClock.Instant? = nil) throws(StoreError) -> PGConnection {
        if let connection, connection.isHealthy { return connection }
        if connection != nil { disconnect() }
        let budget = deadline.map { max($0 - ContinuousClock.now, .milliseconds(1)) } ?? configuration.answerTimeout
        let made = try PGConnection(
            target: target, applicationName: name, timeout: min(budget, configuration.answerTimeout))
        try made.prepare(PostgresStatements.writes)
        made.timeout = configuration.answerTimeout
        connection = made
        statistics.withLock { statistics in
            statistics.writersUp += 1
            if everConnected { statistics.reconnects += 1 }
        }
        everConnected = true
        return made
    }

    func disconnect() {
        guard connection != nil else { return }
        connection = nil
        statistics.withLock { $0.writersUp -= 1 }
    }

    func commit(_ batch: [WriteOperation], until deadline: ContinuousClock.Instant) {
        let rowOperations = batch.filter(\.locksScopeRow)
        if !rowOperations.isEmpty { commitPipelined(rowOperations, until: deadline) }
        for operation in batch where !operation.locksScopeRow { runMaintenance(operation) }
    }

    /// The row operations of a batch in one transaction; if the transaction fails for another
    /// reason than a lost connection (which fails them all: their outcome is unknown), each is
    /// tried again alone, so one bad operation cannot take the others down.
    private func commitPipelined(_ operations: [WriteOperation], until deadline: ContinuousClock.Instant) {
        // Waited their whole bound already (the sweep had not come yet): failed unsent.
        guard ContinuousClock.now < deadline else {
            let waited = configuration.unavailableAfter
            for operation in operations { operation.fail(.unavailable("no answer from the database within \(waited)")) }
            return
        }
        do throws(StoreError) {
            let outcomes = try runTransaction(operations, until: deadline)
            for (operation, outcome) in zip(operations, outcomes) { operation.complete(outcome) }
            statistics.withLock { statistics in
                statistics.batches += 1
                statistics.committedOperations += operations.count
                statistics.largestBatch = max(statistics.largestBatch, operations.count)
            }
        } catch {
            statistics.withLock { $0.failedBatches += 1 }
            disconnect()
            if case .unavailable = error {
                logger.warning("batch failed: database unavailable", metadata: ["error": "\(error)"])
                for operation in operations { operation.fail(error) }
                return
            }
            guard operations.count > 1 else {
                operations.first?.fail(error)
                return
            }
            logger.warning("batch failed; committing its operations one by one", metadata: ["error": "\(error)"])
            // Each alone gets a round trip of its own: the batch's failure was an answer, not silence.
            for operation in operations {
                commitPipelined([operation], until: ContinuousClock.now + configuration.answerTimeout)
            }
        }
    }

    /// `BEGIN`, the calls, `COMMIT`, the notification, `Sync` — one round trip. Returns each
    /// operation's outcome (a refusal such as a version conflict is an outcome, not a failure).
    private func runTransaction(
        _ operations: [WriteOperation], until batchDeadline: ContinuousClock.Instant
    ) throws(StoreError) -> [Result<Int64, StoreError>] {
        // One bound for connecting (when the last connection was lost) and the round trip: these
        // operations left the queue, so `WriteWaitBound` no longer looks after them.
        let deadline = min(batchDeadline, ContinuousClock.now + configuration.answerTimeout)
        let connection = try connected(until: deadline)
        let now = configuration.clock()
        let freshAfter = now - configuration.idempotencyTTLMilliseconds
        // Rows are locked in name order on every node, so two nodes' batches never deadlock.
        let order = operations.indices.sorted { operations[$0].scopeName < operations[$1].scopeName }
        let notice = ChangeNotice.changed(order.compactMap { operations[$0].announcement })
        try connection.enterPipeline()
        try connection.send(sql: "BEGIN", [])
        for index in order {
            let (statement, parameters) = operations[index].call(
                now: now, freshAfter: freshAfter, retained: Int64(configuration.retainedChangeSets))
            try connection.send(statement, parameters)
        }
        try connection.send(sql: "COMMIT", [])
        try connection.send(PostgresStatements.notify, [.text(notice.payload(limit: 7900))])
        try connection.pipelineSync()
        try connection.flush(until: deadline)

        try connection.pipelinedResult(until: deadline).check(operation: "BEGIN")
        var outcomes = [Result<Int64, StoreError>](repeating: .failure(.closed), count: operations.count)
        var failure: StoreError?
        for index in order {
            let result = try connection.pipelinedResult(until: deadline)
            do throws(StoreError) {
                try result.check(operation: operations[index].kind)
                outcomes[index] = operations[index].outcome(
                    code: result.int64(row: 0, column: 0), current: result.int64(row: 0, column: 1))
            } catch {
                failure = failure ?? error
            }
        }
        let commit = try connection.pipelinedResult(until: deadline)
        if let failure { throw failure }
        try commit.check(operation: "COMMIT")
        // Committed: the outcomes stand whatever happens to the notification.
        do throws(StoreError) {
            try connection.pipelinedResult(until: deadline).check(operation: "notify")
            let sync = try connection.pipelinedResult(until: deadline)
            try sync.check(operation: "sync")
            try connection.exitPipeline()
        } catch {
            logger.warning("notification not sent", metadata: ["error": "\(error)"])
            disconnect()
        }
        return outcomes
    }

    private func runMaintenance(_ operation: WriteOperation) {
        do throws(StoreError) {
            let connection = try connected()
            // Maintenance may take long on a large backlog and nobody waits for it: the statement
            // timeout, not the writes' bound.
            connection.timeout = configuration.statementTimeout
            defer { connection.timeout = configuration.answerTimeout }
            switch operation {
            case .applyRetention(let completion):
                let result = try connection.query(
                    PostgresStatements.retention, [.int64(Int64(configuration.retainedChangeSets))])
                completion(.success(result.affectedRows))
            case .expireIdempotencyRecords(let completion):
                let cutoff = configuration.clock() - configuration.idempotencyTTLMilliseconds
                let result = try connection.query(PostgresStatements.expireKeys, [.int64(cutoff)])
                completion(.success(result.affectedRows))
            default:
                break
            }
        } catch {
            disconnect()
            operation.fail(error)
        }
    }
}

extension WriteOperation {
    /// Whether it is one call that locks its scope's row (batched), or maintenance (run alone).
    var locksScopeRow: Bool {
        switch self {
        case .applyRetention, .expireIdempotencyRecords: false
        default: true
        }
    }

    var scopeName: String {
        switch self {
        case .append(let request, _): request.scope
        case .recordRejection(let scope, _, _), .writeSnapshot(let scope, _, _, _): scope
        case .createScope(let descriptor, _, _): descriptor.name
        case .deleteScope(let name, _): name
        case .applyRetention, .expireIdempotencyRecords: ""
        }
    }

    var kind: String {
        switch self {
        case .append: "append"
        case .recordRejection: "record rejection"
        case .createScope: "create scope"
        case .deleteScope: "delete scope"
        case .writeSnapshot: "write snapshot"
        case .applyRetention: "retention"
        case .expireIdempotencyRecords: "expire keys"
        }
    }

    /// What the other nodes are told (created scopes as version 0: they read the real one).
    var announcement: ScopeVersion? {
        switch self {
        case .append(let request, _): ScopeVersion(name: request.scope, version: request.version)
        case .createScope(let descriptor, _, _): ScopeVersion(name: descriptor.name, version: 0)
        case .deleteScope(let name, _): ScopeVersion(name: name, version: 0, deleted: true)
        default: nil
        }
    }

    func call(now: Int64, freshAfter: Int64, retained: Int64) -> (PGStatement, [PGValue]) {
        switch self {
        case .append(let request, _):
            let key = request.idempotency
            return (
                PostgresStatements.append,
                [
                    .text(request.scope), .int64(request.version), .bytes(request.payload),
                    .int64(Int64(bitPattern: request.parentToken)), .int64(Int64(bitPattern: request.token)),
                    key.map { .text($0.key) } ?? .null, key.map { .bytes($0.requestDigest) } ?? .null,
                    key.map { .int32(Int32(clamping: $0.status)) } ?? .null, key.map { .bytes($0.response) } ?? .null,
                    .int64(now), .int64(freshAfter),
                ]
            )
        case .recordRejection(let scope, let record, _):
            return (
                PostgresStatements.recordRejection,
                [
                    .text(scope), .text(record.key), .bytes(record.requestDigest),
                    .int32(Int32(clamping: record.status)),
                    .bytes(record.response), .int64(now), .int64(freshAfter),
                ]
            )
        case .createScope(let descriptor, let snapshot, _):
            return (
                PostgresStatements.createScope,
                [.text(descriptor.name), .text(descriptor.rootClass), .text(descriptor.rootUUID), .bytes(snapshot)]
            )
        case .deleteScope(let name, _):
            return (PostgresStatements.deleteScope, [.text(name)])
        case .writeSnapshot(let scope, let version, let snapshot, _):
            return (
                PostgresStatements.writeSnapshot, [.text(scope), .int64(version), .bytes(snapshot), .int64(retained)]
            )
        case .applyRetention, .expireIdempotencyRecords:
            preconditionFailure("maintenance is not a row call")
        }
    }

    /// Turns a function's `(code, current)` into the operation's outcome: the version, or why not.
    func outcome(code: Int64, current: Int64) -> Result<Int64, StoreError> {
        if code == PostgresSchema.Code.ok.rawValue { return .success(current) }
        return .failure(refusal(code: code, current: current))
    }

    private func refusal(code: Int64, current: Int64) -> StoreError {
        let name = scopeName
        switch PostgresSchema.Code(rawValue: code) {
        case .ok: return .postgres(operation: kind, sqlState: "", message: "not a refusal")
        case .missing: return .scopeMissing(name)
        case .conflict:
            guard case .append(let request, _) = self else { break }
            return .versionConflict(scope: name, expected: current + 1, attempted: request.version)
        case .staleBase:
            guard case .append(let request, _) = self else { break }
            return .staleBase(scope: name, version: request.version)
        case .keyExists:
            switch self {
            case .append(let request, _): return .idempotencyKeyExists(scope: name, key: request.idempotency?.key ?? "")
            case .recordRejection(_, let record, _): return .idempotencyKeyExists(scope: name, key: record.key)
            default: break
            }
        case .exists: return .scopeExists(name)
        case .snapshotAhead:
            guard case .writeSnapshot(_, let version, _, _) = self else { break }
            return .invalidArgument("snapshot version \(version) of scope '\(name)' is ahead of its version \(current)")
        case .snapshotOlder:
            guard case .writeSnapshot(_, let version, _, _) = self else { break }
            return .invalidArgument(
                "snapshot version \(version) of scope '\(name)' is older than its latest \(current)")
        case nil: break
        }
        return .postgres(operation: kind, sqlState: "", message: "unexpected result code \(code)")
    }

    /// Completes the operation with its committed outcome.
    func complete(_ outcome: Result<Int64, StoreError>) {
        switch outcome {
        case .failure(let error): fail(error)
        case .success(let version):
            switch self {
            case .append(_, let completion), .recordRejection(_, _, let completion),
                .writeSnapshot(_, _, _, let completion):
                completion(.success(()))
            case .createScope(_, _, let completion), .deleteScope(_, let completion): completion(.success(version))
            case .applyRetention(let completion), .expireIdempotencyRecords(let completion):
                completion(.success(Int(version)))
            }
        }
    }
}
