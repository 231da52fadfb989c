import HTTPServer
import HeapModule
import Synchronization

/// Ends event streams at a moment (a token's expiry, the rotation age) with a last event saying
/// why. One sweeper task serves every stream: deadlines sit in a min-heap checked once a second,
/// so a stream costs a heap entry, not a task or a timer.
///
/// ```swift
/// deadlines.schedule(stream, at: .now + .seconds(600), finalEvent: SSEFrame.frame(name: "closing", id: nil, json: Array(#"{"reason":"rotation"}"#.utf8)))
/// ```
final class StreamDeadlines: Sendable {
    struct Entry: Comparable, Sendable {
        let deadline: ContinuousClock.Instant
        let id: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.id < rhs.id)
        }
    }

    struct Pending: Sendable {
        let stream: EventStream
        let finalEvent: EncodedEvent
    }

    struct State: Sendable {
        var heap = Heap<Entry>()
        var pending: [UInt64: Pending] = [:]
        var nextID: UInt64 = 0
        var sweeping = false
    }

    static let tick = Duration.seconds(1)
    private let state = Mutex(State())

    /// Sends `finalEvent` and ends `stream` at `deadline`, unless it ends before.
    func schedule(_ stream: EventStream, at deadline: ContinuousClock.Instant, finalEvent: EncodedEvent) {
        let (id, startSweeper) = state.withLock { state in
            state.nextID += 1
            let id = state.nextID
            state.heap.insert(Entry(deadline: deadline, id: id))
            state.pending[id] = Pending(stream: stream, finalEvent: finalEvent)
            let start = !state.sweeping
            state.sweeping = true
            return (id, start)
        }
        stream.onClose { [weak self] in self?.forget(id) }
        if startSweeper { Task { await self.sweep() } }
    }

    /// Entries whose stream has closed.
    var pendingCount: Int { state.withLock { $0.pending.count } }

    private func forget(_ id: UInt64) {
        state.withLock { state in
            state.pending[id] = nil
            // Entries of closed streams wait in the heap until their deadline; rebuild when they dominate.
            if state.heap.count > 2 * state.pending.count + 1024 {
                state.heap = Heap(state.heap.unordered.filter { state.pending[$0.id] != nil })
            }
        }
    }

    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.tick)
            let now = ContinuousClock.now
            let (due, done) = state.withLock { state -> ([Pending], Bool) in
                var due: [Pending] = []
                while let first = state.heap.min, first.deadline <= now {
                    state.heap.removeMin()
                    if let pending = state.pending.removeValue(forKey: first.id) { due.append(pending) }
                }
                if state.pending.isEmpty {
                    state.heap = Heap()
                    state.sweeping = false
                    return (due, true)
                }
                return (due, false)
            }
            for pending in due {
                pending.stream.sendEncoded(pending.finalEvent)
                pending.stream.close()
            }
            if done { return }
        }
    }
}
