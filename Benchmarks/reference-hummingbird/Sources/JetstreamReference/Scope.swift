import DequeModule
import Foundation
import NIOCore
import NIOFoundationCompat

/// One scope: its state, its recent change sets and its SSE subscribers. Being an actor, it applies
/// change sets one at a time and hands each to every subscriber in version order.
actor Scope {
    private var state: ScopeState
    private let limits: ScopeLimits
    /// The SSE frames of the last `historyLimit` change sets, oldest first, versions consecutive.
    private var history: Deque<(version: Int, frame: ByteBuffer)> = []
    private var subscribers: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
    private var nextSubscriberID = 0
    /// The state's JSON, encoded on first use after each change (GETs and snapshots share it).
    private var encodedState: ByteBuffer?
    private let encoder = JSONEncoder()

    init(state: ScopeState, limits: ScopeLimits) {
        self.state = state
        self.limits = limits
    }

    /// The current version and the state's JSON.
    func currentState() -> (version: Int, json: ByteBuffer) {
        (state.version, stateJSON())
    }

    /// Validates and applies a change set; an accepted one is recorded and sent to every subscriber.
    func apply(_ entries: [Result<FragmentRequest, FragmentError>]) -> ChangeSetOutcome {
        let outcome = state.apply(entries)
        if case .accepted(let applied) = outcome {
            encodedState = nil
            let frame = ServerSentEvent.frame(
                event: "changeset", id: applied.version, json: applied.event, encoder: encoder)
            history.append((applied.version, frame))
            if history.count > limits.historyLimit { history.removeFirst() }
            broadcast(frame)
        }
        return outcome
    }

    /// Registers a subscriber. The catch-up is computed in the same actor step as the registration,
    /// so no change set falls between the two or arrives twice.
    ///
    /// - Parameter lastEventID: the resume point; nil sends a snapshot.
    func subscribe(lastEventID: String?) -> Subscription {
        var initial = ServerSentEvent.retry
        if let lastEventID {
            if let version = Int(lastEventID), let missed = changeSets(after: version) {
                for frame in missed { initial.writeImmutableBuffer(frame) }
            } else {
                initial.writeImmutableBuffer(stateFrame(event: "reset"))
            }
        } else {
            initial.writeImmutableBuffer(stateFrame(event: "snapshot"))
        }
        let (events, continuation) = AsyncStream.makeStream(
            of: ByteBuffer.self, bufferingPolicy: .bufferingOldest(limits.streamBufferLimit))
        let id = nextSubscriberID
        nextSubscriberID += 1
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return Subscription(initial: initial, events: events, continuation: continuation)
    }

    /// Sends the keep-alive comment to every subscriber.
    func keepAlive() {
        broadcast(ServerSentEvent.keepAlive)
    }

    private func unsubscribe(_ id: Int) {
        subscribers[id] = nil
    }

    /// The frames after `version`, nil when they are not all retained or `version` is ahead.
    private func changeSets(after version: Int) -> [ByteBuffer]? {
        if version == state.version { return [] }
        guard version < state.version, let oldest = history.first?.version, version >= oldest - 1 else {
            return nil
        }
        return history[(version + 1 - oldest)...].map(\.frame)
    }

    private func stateJSON() -> ByteBuffer {
        if let encodedState { return encodedState }
        do {
            let json = try encoder.encodeAsByteBuffer(state.body, allocator: ByteBufferAllocator())
            encodedState = json
            return json
        } catch {
            fatalError("cannot encode the state of \(state.name): \(error)")
        }
    }

    private func stateFrame(event: String) -> ByteBuffer {
        ServerSentEvent.frame(event: event, id: state.version, encodedJSON: stateJSON())
    }

    /// Queues a frame on every stream; a stream whose buffer is full is ended (the client sees the
    /// connection close and resumes with `Last-Event-ID`), never silently skipped.
    private func broadcast(_ frame: ByteBuffer) {
        var gone: [Int] = []
        for (id, continuation) in subscribers {
            switch continuation.yield(frame) {
            case .enqueued:
                break
            case .dropped:
                continuation.finish()
                gone.append(id)
            case .terminated:
                gone.append(id)
            @unknown default:
                gone.append(id)
            }
        }
        for id in gone { subscribers[id] = nil }
    }
}
