import Synchronization

/// The first of several racing answers, handed to one waiting continuation; later ones are
/// dropped. Races a store read against a deadline without waiting for the loser (a task group
/// would wait for the read to end).
///
/// ```swift
/// let answer = OnceAnswer<String?>()
/// let first = await withCheckedContinuation { continuation in
///     answer.setWaiter(continuation)
///     Task { answer.settle(await read()) }
///     Task { try? await Task.sleep(for: .seconds(3)); answer.settle("timed out") }
/// }
/// ```
final class OnceAnswer<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, Never>?)
        case settled
    }

    private let state = Mutex<State>(.waiting(nil))

    init() {}

    /// Must be called before any `settle` can run (inside `withCheckedContinuation`'s body, before
    /// the racers start).
    func setWaiter(_ continuation: CheckedContinuation<Value, Never>) {
        state.withLock { $0 = .waiting(continuation) }
    }

    /// Resumes the waiter with `value` if nobody did yet.
    func settle(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = state.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .settled
            return waiter
        }
        waiter?.resume(returning: value)
    }
}
