import DequeModule
import Foundation
import NIOCore
import NIOFoundationCompat

/// Everything one scope holds: its state, its recent change sets, its SSE subscribers and the
/// state's JSON cached per version. A value type with no locking of its own, so the two scope
/// kinds share it and differ only in what guards it: the `Scope` actor (the default mode) or the
/// one mutex of `LightScope` (`--light`).
struct ScopeCore {
    var state: ScopeState
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
    mutating func currentState() -> (version: Int, json: ByteBuffer) {
        (state.version, stateJSON())
    }

    /// Records an accepted change set (its frame joins the history and goes to every subscriber);
    /// a rejected one changed nothing.
    ///
    /// - Returns: the streams that fell too far behind. The caller finishes them once it no longer
    ///   guards the core, because finishing a stream runs its termination handler at once and the
    ///   light scope's handler takes the same (non-recursive) lock.
    mutating func record(_ outcome: ChangeSetOutcome) -> [AsyncStream<ByteBuffer>.Continuation] {
        guard case .accepted(let applied) = outcome else { return [] }
        encodedState = nil
        let frame = ServerSentEvent.frame(
            event: "changeset", id: applied.version, json: applied.event, encoder: encoder)
        history.append((applied.version, frame))
        if history.count > limits.historyLimit { history.removeFirst() }
        return broadcast(frame)
    }

    /// Registers a subscriber and computes its catch-up in the same step, so no change set falls
    /// between the two or arrives twice. The caller sets the stream's termination handler (which
    /// calls `unsubscribe(_:)` under its own guard).
    ///
    /// - Parameter lastEventID: the resume point; nil sends a snapshot.
    mutating func subscribe(lastEventID: String?) -> (subscription: Subscription, id: Int) {
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
        return (Subscription(initial: initial, events: events, continuation: continuation), id)
    }

    mutating func unsubscribe(_ id: Int) {
        subscribers[id] = nil
    }

    /// Queues the keep-alive comment on every stream; returns the streams to finish, as `record`.
    mutating func keepAlive() -> [AsyncStream<ByteBuffer>.Continuation] {
        broadcast(ServerSentEvent.keepAlive)
    }

    /// The frames after `version`, nil when they are not all retained or `version` is ahead.
    private func changeSets(after version: Int) -> [ByteBuffer]? {
        if version == state.version { return [] }
        guard version < state.version, let oldest = history.first?.version, version >= oldest - 1 else {
            return nil
        }
        return history[(version + 1 - oldest)...].map(\.frame)
    }

    private mutating func stateJSON() -> ByteBuffer {
        if let encodedState { return encodedState }
        do {
            let json = try encoder.encodeAsByteBuffer(state.body, allocator: ByteBufferAllocator())
            encodedState = json
            return json
        } catch {
            fatalError("cannot encode the state of \(state.name): \(error)")
        }
    }

    private mutating func stateFrame(event: String) -> ByteBuffer {
        ServerSentEvent.frame(event: event, id: state.version, encodedJSON: stateJSON())
    }

    /// Queues a frame on every stream. A stream whose buffer is full is dropped from the
    /// subscribers and returned, to be ended (the client sees the connection close and resumes
    /// with `Last-Event-ID`), never silently skipped.
    private mutating func broadcast(_ frame: ByteBuffer) -> [AsyncStream<ByteBuffer>.Continuation] {
        var gone: [Int] = []
        var tooSlow: [AsyncStream<ByteBuffer>.Continuation] = []
        for (id, continuation) in subscribers {
            switch continuation.yield(frame) {
            case .enqueued:
                break
            case .dropped:
                tooSlow.append(continuation)
                gone.append(id)
            case .terminated:
                gone.append(id)
            @unknown default:
                gone.append(id)
            }
        }
        for id in gone { subscribers[id] = nil }
        return tooSlow
    }
}
