import Dispatch
import Foundation
import Logging
import Store
import Synchronization

/// A few reader threads, each owning one connection, sharing one queue of reads: a read never
/// blocks a Swift concurrency thread on the network, and a connection lost under a read is made
/// again for the next one (the read itself fails with ``StoreError/unavailable(_:)``).
///
/// ```swift
/// let page = try await readers.read { connection throws(StoreError) in try connection.query(statement, values) }
/// ```
final class PostgresReaders: Sendable {
    typealias Job = @Sendable (PGConnection?, StoreError?) -> Void

    private let jobs = CommitQueue<Job>()
    private let finished: [DispatchSemaphore]

    init(
        count: Int, target: PGTarget, configuration: PostgresStore.Configuration,
        statistics: PostgresCounters, logger: Logger
    ) {
        finished = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        for index in 0..<count {
            let thread = Thread { [jobs, finished] in
                defer { finished[index].signal() }
                var connection: PGConnection?
                var everConnected = false
                func drop() {
                    guard connection != nil else { return }
                    connection = nil
                    statistics.withLock { $0.readersUp -= 1 }
                }
                while let batch = jobs.takeBatch(limit: 1) {
                    for job in batch {
                        if connection.map({ !$0.isHealthy }) ?? false { drop() }
                        if connection == nil {
                            do throws(StoreError) {
                                connection = try PGConnection(
                                    target: target, applicationName: "\(configuration.applicationName)-reader-\(index)",
                                    timeout: configuration.answerTimeout)
                                statistics.withLock { statistics in
                                    statistics.readersUp += 1
                                    if everConnected { statistics.reconnects += 1 }
                                }
                                everConnected = true
                            } catch {
                                logger.debug("reader cannot connect", metadata: ["error": "\(error)"])
                                job(nil, error)
                                continue
                            }
                        }
                        job(connection, nil)
                        if connection.map({ !$0.isHealthy }) ?? false { drop() }
                    }
                }
                drop()
            }
            thread.name = "jetstream-pg-reader-\(index)"
            thread.start()
        }
    }

    /// Runs `body` on a reader connection and returns what it returns.
    func read<Value: Sendable>(
        _ body: @escaping @Sendable (PGConnection) throws(StoreError) -> Value
    ) async throws(StoreError) -> Value {
        let result: Result<Value, StoreError> = await withCheckedContinuation { continuation in
            let queued = jobs.enqueue { connection, error in
                guard let connection else { return continuation.resume(returning: .failure(error ?? .closed)) }
                do throws(StoreError) {
                    continuation.resume(returning: .success(try body(connection)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !queued { continuation.resume(returning: .failure(.closed)) }
        }
        return try result.get()
    }

    func close() {
        jobs.close()
        for semaphore in finished {
            semaphore.wait()
            semaphore.signal()
        }
    }
}
