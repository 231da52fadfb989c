import Synchronization

/// Live counters of a running server (relaxed atomics, read from any thread).
final class ServerStats: Sendable {
    let openStreams = Atomic<Int>(0)
    let droppedSlowSubscribers = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
}

/// A snapshot of a server's counters.
///
/// ```swift
/// let stats = server.stats
/// print(stats.openConnections, stats.openStreams, stats.droppedSlowSubscribers)
/// ```
public struct HTTPServerStats: Sendable, Hashable {
    public var openConnections: Int
    public var openStreams: Int
    /// Event streams closed because their unsent bytes exceeded the cap.
    public var droppedSlowSubscribers: Int
    /// Requests dispatched to handlers since start.
    public var requests: Int
}
