import Dispatch
import Foundation
import Logging
import Store
import Synchronization

/// The connection that tells the other nodes about presence: one thread, one queue, one
/// connection made at the first notice (a node whose clients never use presence opens none).
///
/// Presence is sent here, not through a writer, for two reasons. A writer's round trip is a data
/// commit that answers clients; a presence notice queued behind it (or in front of it) would make
/// one wait for the other, and presence may change many times a second per client (a pointer).
/// And a notice must never ride inside a data transaction: `NOTIFY` takes a cluster-wide lock up to
/// its commit. So each batch of notices is its own small transaction — `BEGIN`, one `pg_notify`
/// per notice, `COMMIT`, pipelined in one round trip — with `synchronous_commit = off`: it holds
/// that lock only for a commit that does not wait for the WAL flush, and the data commits of this
/// and every other node never wait behind it for long.
///
/// Presence is a hint that its member refreshes: a notice that cannot be sent (the database
/// unreachable) is dropped with everything queued behind it, never retried.
final class PostgresPresencePublisher: Sendable {
    private let queue = CommitQueue<String>()
    private let closing = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(target: PGTarget, configuration: PostgresStore.Configuration, logger: Logger) {
        let thread = Thread { [self] in
            defer { finished.signal() }
            var connection: PGConnection?
            func connected() throws(StoreError) -> PGConnection {
                if let connection, connection.isHealthy { return connection }
                connection = nil
                let made = try Self.connect(target: target, configuration: configuration)
                connection = made
                return made
            }
            var failing = false
            while let batch = queue.takeBatch(limit: 256) {
                // After close, send only what an open connection can take at once.
                if closing.load(ordering: .acquiring), connection == nil { continue }
                let reused = connection?.isHealthy ?? false
                do throws(StoreError) {
                    do throws(StoreError) {
                        try Self.send(batch, on: try connected(), timeout: configuration.statementTimeout)
                    } catch _ where reused {
                        // An idle connection the server or the network dropped shows only now: once
                        // more on a new one (a notice sent twice only repeats a state).
                        connection = nil
                        try Self.send(batch, on: try connected(), timeout: configuration.statementTimeout)
                    }
                    if failing { logger.info("presence notifications are sent again") }
                    failing = false
                } catch {
                    connection = nil
                    let pending = queue.pendingCount
                    if pending > 0 { _ = queue.takeBatch(limit: pending) }
                    // One warning per outage, not one per notice.
                    logger.log(
                        level: failing ? .debug : .warning, "presence notifications not sent; dropped",
                        metadata: ["error": "\(error)", "notices": "\(batch.count + pending)"])
                    failing = true
                }
            }
        }
        thread.name = "jetstream-pg-presence"
        thread.start()
    }

    /// Queues one payload (already checked against PostgreSQL's size limit); false once closed.
    func publish(_ payload: String) -> Bool { queue.enqueue(payload) }

    /// Sends what is queued if connected, then ends the thread.
    func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.close()
        finished.wait()
        finished.signal()
    }

    private static func connect(
        target: PGTarget, configuration: PostgresStore.Configuration
    ) throws(StoreError) -> PGConnection {
        let connection = try PGConnection(
            target: target, applicationName: "\(configuration.applicationName)-presence",
            timeout: configuration.statementTimeout)
        try connection.prepare([PostgresStatements.presenceNotify])
        return connection
    }

    /// `BEGIN`, `synchronous_commit = off` for this transaction, one `pg_notify` per payload,
    /// `COMMIT` and `Sync`, in one round trip; PostgreSQL delivers them in this order.
    private static func send(_ payloads: [String], on connection: PGConnection, timeout: Duration) throws(StoreError) {
        let deadline = ContinuousClock.now + timeout
        try connection.enterPipeline()
        try connection.send(sql: "BEGIN", [])
        try connection.send(sql: "SET LOCAL synchronous_commit = off", [])
        for payload in payloads { try connection.send(PostgresStatements.presenceNotify, [.text(payload)]) }
        try connection.send(sql: "COMMIT", [])
        try connection.pipelineSync()
        try connection.flush(until: deadline)
        try connection.pipelinedResult(until: deadline).check(operation: "BEGIN")
        try connection.pipelinedResult(until: deadline).check(operation: "SET LOCAL synchronous_commit")
        for _ in payloads { try connection.pipelinedResult(until: deadline).check(operation: "presence notify") }
        try connection.pipelinedResult(until: deadline).check(operation: "COMMIT")
        try connection.pipelinedResult(until: deadline).check(operation: "sync")
        try connection.exitPipeline()
    }
}
