import Synchronization

/// Something that follows a scope: an SSE stream in the gateway, a test's recorder, a client.
///
/// The engine never calls a subscriber directly: it hands each event to the scope's
/// ``ScopeSubscribers`` once, and they deliver it to every subscriber.
public protocol ScopeSubscriber: AnyObject, Sendable {
    /// One event, in version order. Must not block.
    func receive(_ event: ScopeEvent)
    /// No event follows: the scope was deleted, the engine drains, or the subscriber was removed.
    func end()
    /// Whether the subscriber is gone already (its connection closed): a subscription that only
    /// now comes to register — after catching a cold copy up — is then not made, since the
    /// subscriber's own clean-up ran before it could be undone.
    var hasLeft: Bool { get }
}

extension ScopeSubscriber {
    public var hasLeft: Bool { false }
}

/// The subscribers of one scope and how an event reaches them, encoded once for all.
///
/// **Ordering contract.** The engine calls these methods for one scope while it holds that scope's
/// lock, so the calls are totally ordered: a subscriber added with its catch-up before a
/// publication gets the catch-up, then the publication; one added after it gets only events after
/// it (its catch-up already includes that version). An implementation may deliver later and on
/// another thread (the gateway's queues to each connection's loop), but must keep each
/// subscriber's events in call order and must not block.
///
/// ```swift
/// var configuration = ScopeEngineConfiguration(schema: .demo)
/// configuration.makeSubscribers = { DirectSubscribers() }   // the default
/// ```
public protocol ScopeSubscribers: Sendable {
    /// Delivers `catchUp` to `subscriber`, then adds it for every later publication.
    func add(_ subscriber: any ScopeSubscriber, catchUp: [ScopeEvent])
    /// Delivers `event` to every subscriber added so far.
    func publish(_ event: ScopeEvent)
    /// Removes `subscriber` (it ends); no-op when it is not a member.
    func remove(_ subscriber: any ScopeSubscriber)
    /// Delivers `last` (when given) to every subscriber, then ends and removes them all.
    @discardableResult
    func endAll(with last: ScopeEvent?) -> Int
    /// The number of subscribers.
    var count: Int { get }
}

/// The engine's default ``ScopeSubscribers``: delivers synchronously, in the caller's thread, in
/// call order. Right for tests and for in-process subscribers whose `receive` only enqueues.
public final class DirectSubscribers: ScopeSubscribers {
    private let members = Mutex<[ObjectIdentifier: any ScopeSubscriber]>([:])

    public init() {}

    public func add(_ subscriber: any ScopeSubscriber, catchUp: [ScopeEvent]) {
        for event in catchUp { subscriber.receive(event) }
        members.withLock { $0[ObjectIdentifier(subscriber)] = subscriber }
    }

    public func publish(_ event: ScopeEvent) {
        for subscriber in members.withLock({ Array($0.values) }) { subscriber.receive(event) }
    }

    public func remove(_ subscriber: any ScopeSubscriber) {
        let removed = members.withLock { $0.removeValue(forKey: ObjectIdentifier(subscriber)) }
        removed?.end()
    }

    @discardableResult
    public func endAll(with last: ScopeEvent?) -> Int {
        let all = members.withLock { members in
            defer { members.removeAll() }
            return Array(members.values)
        }
        for subscriber in all {
            if let last { subscriber.receive(last) }
            subscriber.end()
        }
        return all.count
    }

    public var count: Int { members.withLock { $0.count } }
}
