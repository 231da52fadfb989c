import Dispatch
import Store

/// Bounds how long a write waits in its writer's queue. A writer stuck on a database that does not
/// answer (a link gone silent: no error, no FIN) holds its batch until the round trip's deadline,
/// then spends as long again connecting; the writes queued behind it would wait for each of those
/// in turn. Every quarter of a second this fails the writes queued for longer than `limit`: they
/// are answered 503 (the client retries, with its `Idempotency-Key`) and are never sent, so no
/// write is committed after its caller was told it failed. A write already sent is bounded by its
/// round trip's deadline instead.
///
/// ```swift
/// let bound = WriteWaitBound(queues: writers.map(\.queue), limit: .seconds(5))
/// bound.cancel()   // when the store closes
/// ```
final class WriteWaitBound: @unchecked Sendable {
    // @unchecked: a dispatch source is safe to cancel from any thread, and nothing else is kept.
    private let timer: any DispatchSourceTimer

    init(queues: [CommitQueue<WriteOperation>], limit: Duration) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250), leeway: .milliseconds(50))
        timer.setEventHandler {
            let cutoff = ContinuousClock.now - limit
            for queue in queues {
                for operation in queue.removeQueued(before: cutoff) {
                    operation.fail(.unavailable("no answer from the database within \(limit)"))
                }
            }
        }
        timer.resume()
    }

    func cancel() { timer.cancel() }
}
