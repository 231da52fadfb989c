import Dispatch
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One whole-body request whose cancellation neither waits nor touches the `URLSessionTask`.
///
/// FoundationNetworking's async `data(for:)` answers a cancellation with
/// `URLSessionTask.cancel()`, which on Linux runs synchronously on the session's queue: from a
/// Swift task's cancellation handler it holds that task locked while it waits, and the session's
/// queue may at that moment be resuming the very same task with its answer, which needs that lock
/// (both threads stop for good). A `cancel()` that races the task's completion can also trap
/// ("a task that is not in the registry"). So a cancelled request is only abandoned: its waiter
/// gets `CancellationError` at once and the answer, when it comes, is dropped. The requests are
/// small and bounded by the session's timeout; a change set that still reaches the server was sent
/// with its `Idempotency-Key`.
final class CancellableRequest: Sendable {
    private enum State {
        case notStarted
        case waiting(CheckedContinuation<(Data, URLResponse), any Error>)
        case cancelled
        case done
    }

    private let session: URLSession
    private let request: URLRequest
    private let state = Mutex<State>(.notStarted)

    init(session: URLSession, request: URLRequest) {
        self.session = session
        self.request = request
    }

    /// Sends the request and returns its body and response (or its error, or `CancellationError`).
    func run() async throws -> (Data, URLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            let cancelledFirst = state.withLock { state in
                guard case .notStarted = state else { return true }
                state = .waiting(continuation)
                return false
            }
            if cancelledFirst {
                continuation.resume(throwing: CancellationError())
                return
            }
            let task = session.dataTask(with: request) { data, response, error in
                let result: Result<(Data, URLResponse), any Error> =
                    if let data, let response { .success((data, response)) } else {
                        .failure(error ?? URLError(.badServerResponse))
                    }
                self.settle(result)
            }
            task.resume()
        }
    }

    /// Abandons the request: its waiter resumes with `CancellationError` (from another thread, not
    /// inside the cancelled task's handler).
    func cancel() {
        let waiter: CheckedContinuation<(Data, URLResponse), any Error>? = state.withLock { state in
            defer { if case .notStarted = state { state = .cancelled } }
            guard case .waiting(let waiter) = state else { return nil }
            state = .cancelled
            return waiter
        }
        guard let waiter else { return }
        DispatchQueue.global().async { waiter.resume(throwing: CancellationError()) }
    }

    private func settle(_ result: Result<(Data, URLResponse), any Error>) {
        let waiter: CheckedContinuation<(Data, URLResponse), any Error>? = state.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done
            return waiter
        }
        waiter?.resume(with: result)
    }
}
