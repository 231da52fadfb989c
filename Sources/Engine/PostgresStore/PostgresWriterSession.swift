import Foundation
import Logging
import Store

/// A writer thread's state: its connection (made on demand, dropped after a failure) and the
/// batches sent on it and not yet answered, oldest first (PostgresWriterSession+Pipeline.swift).
final class PostgresWriterSession {
    let target: PGTarget
    let configuration: PostgresStore.Configuration
    let statistics: PostgresCounters
    let logger: Logger
    let name: String
    var connection: PGConnection?
    var everConnected = false
    /// Sent on ``connection``'s pipeline and not yet answered, oldest first.
    var inFlight: [InFlightBatch] = []
    /// When the newest batch in flight was sent.
    var lastSent = ContinuousClock.now

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

    var hasBatchesInFlight: Bool { !inFlight.isEmpty }

    /// Whether another batch may follow those in flight now: fewer than the most allowed, and
    /// `sendAheadAfter` since the last one was sent, so that on a fast link the writes gather
    /// until the answer comes instead of each going out alone.
    var maySendAhead: Bool {
        inFlight.count < configuration.maximumBatchesInFlight
            && ContinuousClock.now - lastSent >= configuration.sendAheadAfter
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

    /// Sends a batch's row operations after the batches in flight (one transaction); its
    /// maintenance runs once every batch in flight is answered, since a maintenance statement
    /// is not pipelined.
    func start(_ batch: [WriteOperation], until deadline: ContinuousClock.Instant) {
        let rowOperations = batch.filter(\.locksScopeRow)
        if !rowOperations.isEmpty { send(rowOperations, until: deadline) }
        let maintenance = batch.filter { !$0.locksScopeRow }
        guard !maintenance.isEmpty else { return }
        finishAllBatches()
        for operation in maintenance { runMaintenance(operation) }
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
