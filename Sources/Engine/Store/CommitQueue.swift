import Dispatch
import Synchronization

/// The queue between writers (any thread) and the commit thread: writers enqueue and signal, the commit
/// thread takes everything pending as one batch. A counting semaphore carries the wake-ups, so none is
/// lost between a check of the queue and the wait. Shared by the SQLite commit thread and the
/// PostgreSQL writer connections (one queue each).
package final class CommitQueue<Operation: Sendable>: Sendable {
    private struct State {
        var pending: [Operation] = []
        /// When each pending operation was queued (same order as `pending`).
        var queuedAt: [ContinuousClock.Instant] = []
        var paused = false
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)

    /// Queues `operation`; `false` when the queue is closed (the caller fails the operation).
    package init() {}

    package func enqueue(_ operation: Operation) -> Bool {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.pending.append(operation)
            state.queuedAt.append(.now)
            return true
        }
        if accepted { wakeup.signal() }
        return accepted
    }

    /// Blocks until operations are pending and commits are not paused, then returns up to `limit` of them
    /// in submission order; `nil` once the queue is closed and drained.
    package func takeBatch(limit: Int) -> [Operation]? {
        takeBatchWithAge(limit: limit)?.batch
    }

    package var pendingCount: Int { state.withLock { $0.pending.count } }

    /// ``takeBatch(limit:)``, with when the oldest operation of the batch was queued.
    package func takeBatchWithAge(limit: Int) -> (batch: [Operation], oldest: ContinuousClock.Instant)? {
        while true {
            let taken: (batch: [Operation], oldest: ContinuousClock.Instant)?? = state.withLock { state in
                if let taken = Self.take(limit: limit, from: &state) { return .some(taken) }
                if state.closed, state.pending.isEmpty { return .some(nil) }
                return nil
            }
            if let taken {
                // Several consumers may wait on one queue (the PostgreSQL readers): the one that
                // sees it closed passes the wake-up on, so every consumer ends.
                if taken == nil { wakeup.signal() }
                return taken
            }
            wakeup.wait()
        }
    }

    /// ``takeBatchWithAge(limit:)`` without the wait: `nil` when nothing can be taken now. A
    /// PostgreSQL writer with a batch in flight looks here between its waits on the database.
    /// (The semaphore keeps the wake-ups of what this takes; a later blocking take that finds the
    /// queue empty waits again.)
    package func takeBatchWithAgeIfQueued(limit: Int) -> (batch: [Operation], oldest: ContinuousClock.Instant)? {
        state.withLock { state in Self.take(limit: limit, from: &state) }
    }

    private static func take(
        limit: Int, from state: inout State
    ) -> (batch: [Operation], oldest: ContinuousClock.Instant)? {
        guard !state.paused, !state.pending.isEmpty else { return nil }
        let count = min(limit, state.pending.count)
        let taken = (Array(state.pending.prefix(count)), state.queuedAt[0])
        state.pending.removeFirst(count)
        state.queuedAt.removeFirst(count)
        return taken
    }

    /// Removes and returns the operations queued before `instant` (the oldest first; they are at
    /// the front), so that they are never taken: the caller fails them. PostgreSQL's writers use
    /// it to bound how long a write waits for an unreachable database.
    package func removeQueued(before instant: ContinuousClock.Instant) -> [Operation] {
        state.withLock { state in
            let count = state.queuedAt.prefix { $0 < instant }.count
            guard count > 0 else { return [] }
            let removed = Array(state.pending.prefix(count))
            state.pending.removeFirst(count)
            state.queuedAt.removeFirst(count)
            return removed
        }
    }

    /// Removes and returns every queued operation.
    package func removeAll() -> [Operation] {
        state.withLock { state in
            defer {
                state.pending = []
                state.queuedAt = []
            }
            return state.pending
        }
    }

    package var isEmpty: Bool { pendingCount == 0 }

    package func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
        wakeup.signal()
    }

    /// Refuses new operations; those already queued are still committed (even if commits were paused).
    package func close() {
        state.withLock {
            $0.closed = true
            $0.paused = false
        }
        wakeup.signal()
    }
}

/// A write queued for the commit thread. Each runs inside the batch transaction under its own savepoint,
/// so one failing operation leaves the others of its batch intact.
package enum WriteOperation: Sendable {
    package typealias Completion<Value> = @Sendable (Result<Value, StoreError>) -> Void

    case append(AppendRequest, Completion<Void>)
    case recordRejection(scope: String, IdempotencyRecord, Completion<Void>)
    case createScope(ScopeDescriptor, snapshot: [UInt8], Completion<Int64>)
    case deleteScope(String, Completion<Int64>)
    case writeSnapshot(scope: String, version: Int64, snapshot: [UInt8], Completion<Void>)
    case writeMetadata(key: String, value: [UInt8]?, Completion<Void>)
    case applyRetention(Completion<Int>)
    case expireIdempotencyRecords(Completion<Int>)

    /// Completes the operation with `error` without running it (store closed, transaction failed).
    package func fail(_ error: StoreError) {
        switch self {
        case .append(_, let completion), .recordRejection(_, _, let completion),
            .writeSnapshot(_, _, _, let completion), .writeMetadata(_, _, let completion):
            completion(.failure(error))
        case .createScope(_, _, let completion), .deleteScope(_, let completion): completion(.failure(error))
        case .applyRetention(let completion), .expireIdempotencyRecords(let completion): completion(.failure(error))
        }
    }
}
