import NIOCore

/// One scope of the default mode: its `ScopeCore` behind an actor, so change sets are applied one
/// at a time and handed to every subscriber in version order, each after the full validation of
/// `ScopeState.apply`.
actor Scope: ScopeStore {
    private var core: ScopeCore

    init(state: ScopeState, limits: ScopeLimits) {
        self.core = ScopeCore(state: state, limits: limits)
    }

    func currentState() -> (version: Int, json: ByteBuffer) {
        core.currentState()
    }

    /// Validates and applies a change set; an accepted one is recorded and sent to every subscriber.
    func apply(_ entries: [Result<FragmentRequest, FragmentError>]) -> ChangeSetOutcome {
        let outcome = core.state.apply(entries)
        // The termination handlers only schedule a task, so finishing inside the actor is safe.
        for stream in core.record(outcome) { stream.finish() }
        return outcome
    }

    /// Registers a subscriber; the catch-up is computed in the same actor step as the registration.
    func subscribe(lastEventID: String?) -> Subscription {
        let (subscription, id) = core.subscribe(lastEventID: lastEventID)
        subscription.continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return subscription
    }

    /// Sends the keep-alive comment to every subscriber.
    func keepAlive() {
        for stream in core.keepAlive() { stream.finish() }
    }

    private func unsubscribe(_ id: Int) {
        core.unsubscribe(id)
    }
}
