import CLibPQ
import Logging
import Store

/// A batch sent on a writer's connection and not yet answered: `BEGIN`, one call per operation,
/// `COMMIT`, the notification, `Sync`.
struct InFlightBatch {
    let operations: [WriteOperation]
    /// `operations`' indices in the order their calls were sent (by scope name, so that two
    /// nodes' batches lock rows in the same order and never deadlock).
    let order: [Int]
    /// Its answer is waited for until then; after that the connection counts as lost.
    let deadline: ContinuousClock.Instant
}

/// What the database answered to one batch.
enum BatchAnswer {
    /// Committed: each operation's outcome (a refusal such as a version conflict is an outcome).
    case committed([Result<Int64, StoreError>])
    /// A statement failed, so nothing of the batch was written; the connection is left in the
    /// failed transaction (its `COMMIT` was skipped) and must be dropped.
    case rolledBack(StoreError)
}

extension PostgresWriterSession {
    /// Sends the row operations of a batch as one transaction after the batches in flight, in one
    /// write. A lost connection fails it and every batch in flight: their outcome is unknown.
    func send(_ operations: [WriteOperation], until batchDeadline: ContinuousClock.Instant) {
        // Waited their whole bound already (the sweep had not come yet): failed unsent.
        guard ContinuousClock.now < batchDeadline else {
            let waited = configuration.unavailableAfter
            for operation in operations { operation.fail(.unavailable("no answer from the database within \(waited)")) }
            return
        }
        // One bound for connecting (when the last connection was lost) and the round trip: these
        // operations left the queue, so `WriteWaitBound` no longer looks after them.
        let deadline = min(batchDeadline, ContinuousClock.now + configuration.answerTimeout)
        do throws(StoreError) {
            let connection = try connected(until: deadline)
            let now = configuration.clock()
            let freshAfter = now - configuration.idempotencyTTLMilliseconds
            let order = operations.indices.sorted { operations[$0].scopeName < operations[$1].scopeName }
            let notice = ChangeNotice.changed(order.compactMap { operations[$0].announcement })
            if inFlight.isEmpty { try connection.enterPipeline() }
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
            inFlight.append(InFlightBatch(operations: operations, order: order, deadline: deadline))
            lastSent = .now
        } catch {
            connectionLost(error, unsent: operations)
        }
    }

    /// Waits up to `limit` for the oldest batch's answer to start arriving, and then reads it
    /// whole; at its deadline, the connection counts as lost.
    func finishOldestBatch(waitingAtMost limit: Duration) {
        guard let oldest = inFlight.first, let connection else { return }
        let now = ContinuousClock.now
        if now < oldest.deadline {
            do throws(StoreError) {
                guard try connection.resultReady(waitingAtMost: min(limit, oldest.deadline - now)) else { return }
            } catch {
                return connectionLost(error)
            }
        }
        finishOldest()
    }

    /// Reads the answers of every batch in flight.
    func finishAllBatches() {
        while !inFlight.isEmpty { finishOldest() }
    }

    /// Reads the oldest batch's answer and completes its operations. If its transaction failed
    /// for another reason than a lost connection, each operation is tried again alone, so that one
    /// bad operation cannot take the others down. The batches sent after it ran in its failed
    /// transaction (or after its rollback): their answers are read first, and those that failed
    /// too are tried again the same way, in order.
    private func finishOldest() {
        guard let connection, !inFlight.isEmpty else { return }
        let batch = inFlight.removeFirst()
        let answer: BatchAnswer
        do throws(StoreError) {
            answer = try read(batch, on: connection)
        } catch {
            inFlight.insert(batch, at: 0)
            return connectionLost(error)
        }
        guard case .rolledBack(let error) = answer else {
            complete(batch, answer)
            if inFlight.isEmpty {
                do throws(StoreError) { try connection.exitPipeline() } catch { disconnect() }
            }
            return
        }
        var failed = [(batch: batch, error: error, retryAlone: batch.operations.count > 1)]
        while !inFlight.isEmpty {
            let next = inFlight.removeFirst()
            do throws(StoreError) {
                let answer = try read(next, on: connection)
                if case .rolledBack(let error) = answer {
                    failed.append((next, error, true))
                } else {
                    complete(next, answer)
                }
            } catch {
                inFlight.insert(next, at: 0)
                connectionLost(error, unsent: failed.flatMap(\.batch.operations))
                return
            }
        }
        disconnect()
        statistics.withLock { $0.failedBatches += failed.count }
        for (batch, error, retryAlone) in failed {
            guard retryAlone else {
                batch.operations.first?.fail(error)
                continue
            }
            logger.warning("batch failed; committing its operations one by one", metadata: ["error": "\(error)"])
            // Each alone gets a round trip of its own: the batch's failure was an answer, not silence.
            for operation in batch.operations {
                send([operation], until: ContinuousClock.now + configuration.answerTimeout)
                finishAllBatches()
            }
        }
    }

    private func complete(_ batch: InFlightBatch, _ answer: BatchAnswer) {
        guard case .committed(let outcomes) = answer else { return }
        for (operation, outcome) in zip(batch.operations, outcomes) { operation.complete(outcome) }
        statistics.withLock { statistics in
            statistics.batches += 1
            statistics.committedOperations += batch.operations.count
            statistics.largestBatch = max(statistics.largestBatch, batch.operations.count)
        }
    }

    /// Reads one batch's results, through its `Sync`. A connection-level failure throws; a
    /// statement's failure is the answer ``BatchAnswer/rolledBack(_:)``.
    private func read(_ batch: InFlightBatch, on connection: PGConnection) throws(StoreError) -> BatchAnswer {
        let deadline = batch.deadline
        var failure: StoreError?
        func check(_ result: PGResult, _ operation: String) throws(StoreError) -> Bool {
            do throws(StoreError) {
                try result.check(operation: operation)
                return true
            } catch {
                if case .unavailable = error { throw error }
                failure = failure ?? error
                return false
            }
        }
        _ = try check(connection.pipelinedResult(until: deadline), "BEGIN")
        var outcomes = [Result<Int64, StoreError>](repeating: .failure(.closed), count: batch.operations.count)
        for index in batch.order {
            let result = try connection.pipelinedResult(until: deadline)
            if try check(result, batch.operations[index].kind), failure == nil {
                outcomes[index] = batch.operations[index].outcome(
                    code: result.int64(row: 0, column: 0), current: result.int64(row: 0, column: 1))
            }
        }
        _ = try check(connection.pipelinedResult(until: deadline), "COMMIT")
        let notify = try connection.pipelinedResult(until: deadline)
        let sync = try connection.pipelinedResult(until: deadline)
        guard sync.status == PGRES_PIPELINE_SYNC else {
            throw .unavailable("the pipeline is out of step: expected the batch's Sync, got status \(sync.status)")
        }
        if let failure { return .rolledBack(failure) }
        // Committed: the outcomes stand whatever happened to the notification.
        do throws(StoreError) {
            try notify.check(operation: "notify")
        } catch {
            logger.warning("notification not sent", metadata: ["error": "\(error)"])
        }
        return .committed(outcomes)
    }

    /// The connection is gone, or out of step: every batch in flight fails (its outcome is
    /// unknown), with `unsent` operations.
    func connectionLost(_ error: StoreError, unsent: [WriteOperation] = []) {
        let lost = inFlight
        inFlight = []
        disconnect()
        statistics.withLock { $0.failedBatches += lost.count + (unsent.isEmpty ? 0 : 1) }
        logger.warning("batch failed: database unavailable", metadata: ["error": "\(error)"])
        for batch in lost {
            for operation in batch.operations { operation.fail(error) }
        }
        for operation in unsent { operation.fail(error) }
    }
}
