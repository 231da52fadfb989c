import HTTPServer
import ScopeEngine
import SocketLoop
import Synchronization

/// An SSE stream as a scope subscriber.
final class StreamSubscriber: ScopeSubscriber {
    let stream: EventStream

    init(_ stream: EventStream) {
        self.stream = stream
    }

    func receive(_ event: ScopeEvent) {
        stream.sendEncoded(SSEFrame.frame(event))
    }

    /// `close()` is queued behind every event sent before it, once: what is published after
    /// the end is not written.
    func end() {
        stream.close()
    }

    var hasLeft: Bool { stream.isClosed }
}

/// The subscribers of one scope as SSE streams on the server's loops: each event is framed once
/// (``SSEFrame``), each loop with streams of the scope gets one queued task per event, and that
/// task writes the same buffer to all of its streams. Streams leave when they close.
///
/// Ordering (the engine's ``ScopeEngine/ScopeSubscribers`` contract): a stream's catch-up and its
/// joining the group are queued to its loop as one task, and every publication is queued to the
/// same loops, so each stream sees its catch-up, then every later publication, in order.
///
/// Any other subscriber (a scope of a many-scope stream, ``ManyScopesStream/Member``) is a member
/// told of each event directly, in the caller's order: the engine calls under the scope's lock,
/// and a member only queues its own framing to its stream's loop.
final class StreamSubscribers: ScopeSubscribers {
    private let group = EventBroadcaster()
    private let members = Mutex<[ObjectIdentifier: any ScopeSubscriber]>([:])

    func add(_ subscriber: any ScopeSubscriber, catchUp: [ScopeEvent]) {
        guard let subscriber = subscriber as? StreamSubscriber else {
            for event in catchUp { subscriber.receive(event) }
            members.withLock { $0[ObjectIdentifier(subscriber)] = subscriber }
            return
        }
        // Joined now (under the engine's lock): a publication that follows is queued to the
        // stream's loop after the task that writes the catch-up and puts the stream in the group.
        group.add(subscriber.stream, catchUp: catchUp.map(SSEFrame.frame))
    }

    func publish(_ event: ScopeEvent) {
        group.broadcast(encoding: { SSEFrame.frame(event) })
        for member in members.withLock({ Array($0.values) }) { member.receive(event) }
    }

    /// A stream ends; a member only leaves (its many-scope stream goes on with its other scopes).
    func remove(_ subscriber: any ScopeSubscriber) {
        if subscriber is StreamSubscriber {
            subscriber.end()
        } else {
            members.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(subscriber)) }
        }
    }

    @discardableResult
    func endAll(with last: ScopeEvent?) -> Int {
        let count = last.map { group.broadcast(encoded: SSEFrame.frame($0)) } ?? group.subscriberCount
        group.closeAll()
        let ended = members.withLock { members in
            defer { members = [:] }
            return Array(members.values)
        }
        for member in ended {
            if let last { member.receive(last) }
            member.end()
        }
        return count + ended.count
    }

    var count: Int { group.subscriberCount + members.withLock { $0.count } }
}
