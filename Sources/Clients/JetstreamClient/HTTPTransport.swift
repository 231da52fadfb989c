import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client needs from HTTP: whole requests, and a response whose body arrives in pieces
/// (the event stream). ``URLSessionTransport`` is the one that ships; tests or apps with their own
/// networking provide another.
///
/// ```swift
/// let client = Client(url: server, transport: URLSessionTransport())
/// ```
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the whole body with the response.
    func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse)

    /// Sends `request` and returns the response head as soon as it arrives, with its body as a
    /// stream of chunks. Cancelling the task that iterates the stream (or dropping the stream)
    /// cancels the request.
    func stream(for request: URLRequest) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>)
}

/// ``HTTPTransport`` over Foundation's `URLSession`. The event stream is read with a data
/// delegate, chunk by chunk (FoundationNetworking on Linux has no `bytes(for:)`), one session per
/// stream so each has its own delegate.
public struct URLSessionTransport: HTTPTransport {
    private let configuration: URLSessionConfiguration
    private let session: URLSession

    /// A transport with `configuration` (default: ephemeral — no cookies or cache on disk).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.configuration = configuration
        self.session = URLSession(configuration: configuration)
    }

    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Not `session.data(for:)`: its cancellation handler cancels the URLSessionTask right
        // there, and on Linux that waits for the session's queue while the Swift task is locked —
        // and that queue may be waiting for the same lock to hand the task its answer (a deadlock
        // seen when a sync stopped with a request in flight). Here the cancel is sent from
        // elsewhere (`CancellableRequest`).
        let request = CancellableRequest(session: session, request: request)
        let (data, response) = try await withTaskCancellationHandler {
            try await request.run()
        } onCancel: {
            request.cancel()
        }
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }

    public func stream(for request: URLRequest) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>)
    {
        let (chunks, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let delegate = StreamingDelegate(continuation: continuation)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            // Termination may come from inside a task's cancellation, with that task locked, and
            // `cancel()` waits for the session's queue, which may be waiting for the same lock to
            // deliver a chunk: cancel from another thread (see `CancellableRequest`). A response
            // that already ended is not cancelled (a cancel racing the end can trap on Linux); its
            // session was invalidated when it ended.
            DispatchQueue.global().async {
                guard !delegate.hasEnded else { return }
                task.cancel()
                session.invalidateAndCancel()
            }
        }
        task.resume()
        let response = try await withTaskCancellationHandler {
            try await delegate.response()
        } onCancel: {
            continuation.finish(throwing: CancellationError())
        }
        return (response, chunks)
    }
}

/// Receives one streaming response: the head is handed to the waiting `response()`, body chunks
/// and the end go to the stream's continuation.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private let head = Mutex<HeadState>(.waiting(nil))
    private let ended = Atomic<Bool>(false)

    /// Whether the response ended (completed, failed or cancelled).
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    private enum HeadState {
        case waiting(CheckedContinuation<HTTPURLResponse, any Error>?)
        case arrived(HTTPURLResponse)
        case failed(any Error)
    }

    init(continuation: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.continuation = continuation
    }

    func response() async throws -> HTTPURLResponse {
        try await withCheckedThrowingContinuation { waiter in
            let ready: Result<HTTPURLResponse, any Error>? = head.withLock { state in
                switch state {
                case .waiting:
                    state = .waiting(waiter)
                    return nil
                case .arrived(let response): return .success(response)
                case .failed(let error): return .failure(error)
                }
            }
            if let ready { waiter.resume(with: ready) }
        }
    }

    private func settle(_ outcome: Result<HTTPURLResponse, any Error>) {
        let waiter: CheckedContinuation<HTTPURLResponse, any Error>? = head.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            switch outcome {
            case .success(let response): state = .arrived(response)
            case .failure(let error): state = .failed(error)
            }
            return waiter
        }
        waiter?.resume(with: outcome)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse {
            settle(.success(http))
        } else {
            settle(.failure(URLError(.badServerResponse)))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation.yield(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        ended.store(true, ordering: .releasing)
        settle(.failure(error ?? URLError(.badServerResponse)))
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
        session.finishTasksAndInvalidate()
    }
}
