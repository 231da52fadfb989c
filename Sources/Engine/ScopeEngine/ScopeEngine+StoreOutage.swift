import Logging
import Store
import Synchronization

/// A shared store that stops answering (a node cut off from PostgreSQL, docs/store.md "When the
/// database stops answering"): the node can neither publish new versions nor accept writes, so its
/// streams are closed with `closing` — clients reconnect at once, and behind the shipped proxy land
/// on a node that still reaches the database — and new streams are refused until it answers again.
extension ScopeEngine {
    /// Why the store cannot serve now, nil when it can (``Store/ChangeLogStore/unavailability``).
    public var storeUnavailability: String? { store.unavailability }

    /// The `closing` event of streams closed because the store stopped answering.
    static let closingForOutage = ScopeEvent(
        kind: .closing, version: nil, payload: Array(#"{"reason":"store-unavailable"}"#.utf8))

    /// Watches the store's availability every `interval` while the engine lives and does not
    /// drain: when it turns unavailable, every subscriber gets `closing` and ends (once per outage).
    func watchStoreOutages(every interval: Duration = .milliseconds(250)) {
        Task { [weak self] in
            var wasUnavailable = false
            // The engine is held only while it is checked, never across the sleep.
            while let isUnavailable = self?.checkStoreOutage(wasUnavailable: wasUnavailable) {
                wasUnavailable = isUnavailable
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One look at the store: closes the streams when it just turned unavailable. Nil once the
    /// engine drains (the drain closes the streams itself).
    private func checkStoreOutage(wasUnavailable: Bool) -> Bool? {
        guard !isDraining else { return nil }
        let reason = store.unavailability
        if let reason, !wasUnavailable {
            let ended = closeStreams(with: Self.closingForOutage)
            logger.warning(
                "the store stopped answering: streams closed",
                metadata: ["reason": "\(reason)", "subscribers": "\(ended)"])
        } else if reason == nil, wasUnavailable {
            logger.info("the store answers again")
        }
        return reason != nil
    }

    /// Ends every subscriber of every hosted scope with `event`; returns how many.
    func closeStreams(with event: ScopeEvent) -> Int {
        var ended = 0
        for handle in directory.withLock({ Array($0.hosted.values) }) {
            ended += handle.runtime.withLock { _ in handle.subscribers.endAll(with: event) }
        }
        return ended
    }
}
