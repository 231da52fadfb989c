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
/// Writes that arrive while a batch is on its way do not wait for its answer: once
/// `sendAheadAfter` has passed since the last batch was sent, the next batch follows on the same
/// connection, up to `maximumBatchesInFlight` (``PostgresWriterSession``). The database runs
/// them in the order sent, and answers come back in that order. On a fast link the answer usually
/// comes first, and the writes gather into one batch as before.
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
            let session = PostgresWriterSession(
                target: target, configuration: configuration, statistics: statistics, logger: logger,
                name: "\(configuration.applicationName)-writer-\(index)")
            // Connected before the first write needs it (a failure here is retried by that write).
            _ = try? session.connected()
            let limit = configuration.maximumBatchSize
            while true {
                // A write waits at most `unavailableAfter` in all: queued, then connecting and
                // in its round trip (`WriteWaitBound` looks after it only while it is queued).
                if !session.hasBatchesInFlight {
                    guard let (batch, oldest) = queue.takeBatchWithAge(limit: limit) else { break }
                    session.start(batch, until: oldest + configuration.unavailableAfter)
                } else if session.maySendAhead, let (batch, oldest) = queue.takeBatchWithAgeIfQueued(limit: limit) {
                    session.start(batch, until: oldest + configuration.unavailableAfter)
                } else {
                    // New writes are looked for at least every millisecond meanwhile.
                    session.finishOldestBatch(waitingAtMost: .milliseconds(1))
                }
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
        case .applyRetention, .expireIdempotencyRecords, .writeMetadata: ""
        }
    }

    var kind: String {
        switch self {
        case .append: "append"
        case .recordRejection: "record rejection"
        case .createScope: "create scope"
        case .deleteScope: "delete scope"
        case .writeSnapshot: "write snapshot"
        case .writeMetadata: "write metadata"
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
        case .writeMetadata(let key, let value, _):
            return (PostgresStatements.writeMetadata, [.text(key), value.map(PGValue.bytes) ?? .null])
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
                .writeSnapshot(_, _, _, let completion), .writeMetadata(_, _, let completion):
                completion(.success(()))
            case .createScope(_, _, let completion), .deleteScope(_, let completion): completion(.success(version))
            case .applyRetention(let completion), .expireIdempotencyRecords(let completion):
                completion(.success(Int(version)))
            }
        }
    }
}
