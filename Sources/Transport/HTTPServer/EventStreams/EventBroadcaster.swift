import SocketLoop
import Synchronization

/// Fans one event out to many streams across loops: the event is encoded once, each loop with
/// subscribers gets one queued task, and that task writes the same buffer to all of its streams.
/// Streams leave the group when they close.
///
/// ```swift
/// let group = EventBroadcaster()
/// router.get("/subscribe") { request, context in
///     group.add(context.openEventStream())
///     return .streamOpened
/// }
/// group.broadcast(SSEEvent(id: "42", event: "changeset", data: json))
/// ```
public final class EventBroadcaster: Sendable {
    private let members = Mutex<[LoopMembers]>([])
    private let total = Counter()

    /// The streams of one loop; `streams` is touched only on that loop.
    private final class LoopMembers: @unchecked Sendable {
        let loop: EventLoop
        var streams: [ObjectIdentifier: EventStream] = [:]
        let count = Atomic<Int>(0)
        init(loop: EventLoop) { self.loop = loop }
    }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    public init() {}

    /// The number of streams in the group.
    public var subscriberCount: Int { total.value.load(ordering: .relaxed) }

    /// Adds `stream`, after writing `catchUp` to it; it leaves the group when it closes.
    ///
    /// Every ``broadcast(encoded:)`` that starts after this call returns reaches the stream, after
    /// `catchUp`: the stream's loop is counted as having a member at once (so the broadcast queues
    /// a task there), and the task that writes `catchUp` and joins the stream was queued first.
    public func add(_ stream: EventStream, catchUp: [EncodedEvent] = []) {
        let group = members.withLock { members in
            if let existing = members.first(where: { $0.loop === stream.loop }) { return existing }
            let created = LoopMembers(loop: stream.loop)
            members.append(created)
            return created
        }
        group.count.add(1, ordering: .relaxed)
        let total = self.total
        stream.loop.execute {
            for event in catchUp { stream.writeOnLoop(event) }
            let key = ObjectIdentifier(stream)
            guard group.streams[key] == nil else {
                group.count.subtract(1, ordering: .relaxed)
                return
            }
            group.streams[key] = stream
            total.value.add(1, ordering: .relaxed)
            stream.onClose {
                stream.loop.executeOrRunNow {
                    if group.streams.removeValue(forKey: key) != nil {
                        group.count.subtract(1, ordering: .relaxed)
                        total.value.subtract(1, ordering: .relaxed)
                    }
                }
            }
        }
    }

    /// Encodes `event` once and writes it to every stream; returns the number of subscribers.
    @discardableResult
    public func broadcast(_ event: SSEEvent) -> Int {
        broadcast(encoded: event.encoded())
    }

    /// Writes an already encoded event to every stream; returns the number of subscribers.
    @discardableResult
    public func broadcast(encoded event: EncodedEvent) -> Int {
        broadcast(encoding: { event })
    }

    /// Writes the event `encode` makes to every stream; returns the number of subscribers.
    /// `encode` runs only when some stream is there to write to: a scope nobody follows does not
    /// pay for its events' encoding on every write.
    @discardableResult
    public func broadcast(encoding encode: () -> EncodedEvent) -> Int {
        let groups = members.withLock { $0 }
        var encoded: EncodedEvent?
        for group in groups where group.count.load(ordering: .relaxed) > 0 {
            let event = encoded ?? encode()
            encoded = event
            // Always queued, even from the loop itself: a stream whose joining task is queued on
            // the loop must see this event after its catch-up, not miss it.
            group.loop.execute {
                for stream in group.streams.values { stream.writeOnLoop(event) }
            }
        }
        return subscriberCount
    }

    /// Ends every stream in the group.
    public func closeAll() {
        let groups = members.withLock { $0 }
        for group in groups {
            // Queued like broadcasts, so a last event broadcast before the close is written first.
            group.loop.execute {
                for stream in Array(group.streams.values) { stream.endOnLoop() }
            }
        }
    }
}
