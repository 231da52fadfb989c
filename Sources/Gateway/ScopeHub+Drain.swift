import HTTPServer
import Logging
import Store
import Synchronization

extension ScopeHub {
    /// The in-band event every open stream gets when the gateway drains, before it ends:
    /// reconnect (elsewhere) with `Last-Event-ID`; it carries no id, so the resume point stays the
    /// last change set received.
    static let closingEvent = ScopeEvents.event("closing", id: nil, json: Array(#"{"reason":"shutdown"}"#.utf8))

    /// Whether the gateway is draining for shutdown.
    public var isDraining: Bool { drainState.isDraining }

    /// Starts draining: readiness turns false at once, every open event stream gets
    /// `event: closing` and ends, and streams opened from now on get the same at once. Requests
    /// in flight are not touched (the HTTP server's graceful shutdown lets them finish).
    public func beginDrain() {
        guard drainState.begin() else { return }
        let handles = scopes.withLock { Array($0.values) }
        var closed = 0
        for handle in handles {
            // Under the scope's lock: a stream registering concurrently is either already in the
            // group (and closed here) or sees the drain flag in `subscribe` (and closes itself).
            closed += handle.runtime.withLock { _ in
                let count = handle.subscribers.broadcast(encoded: Self.closingEvent)
                handle.subscribers.closeAll()
                return count
            }
        }
        logger.info("draining: not ready, event streams closed", metadata: ["streams": "\(closed)"])
    }

    /// `nil` when the gateway can serve (not draining and the store answers a read), else why not.
    public func readinessProblem() async -> String? {
        if isDraining { return "the gateway is draining for shutdown" }
        do {
            _ = try await store.listScopes(after: nil, limit: 1)
            return nil
        } catch {
            return "the store does not answer: \(error)"
        }
    }
}
