import NIOCore
import Synchronization

/// One scope of the light mode (`--light`), written the way a developer would in an afternoon: one
/// mutex around the `ScopeCore` (state, recent frames, subscribers, cached state JSON) and the
/// light checks of `ScopeState.applyLightly`. Every call runs on the caller's task under the lock,
/// so a change set costs no actor hop.
final class LightScope: ScopeStore {
    private let core: Mutex<ScopeCore>

    init(state: ScopeState, limits: ScopeLimits) {
        self.core = Mutex(ScopeCore(state: state, limits: limits))
    }

    func currentState() -> (version: Int, json: ByteBuffer) {
        core.withLock { $0.currentState() }
    }

    func apply(_ entries: [Result<FragmentRequest, FragmentError>]) -> ChangeSetOutcome {
        let (outcome, tooSlow) = core.withLock { core in
            let outcome = core.state.applyLightly(entries)
            return (outcome, core.record(outcome))
        }
        // Outside the lock: finishing runs the stream's termination handler, which takes it.
        for stream in tooSlow { stream.finish() }
        return outcome
    }

    func subscribe(lastEventID: String?) -> Subscription {
        core.withLock { core in
            let (subscription, id) = core.subscribe(lastEventID: lastEventID)
            // Runs when the stream ends (client gone, cancelled, or too slow), never under the lock.
            subscription.continuation.onTermination = { [weak self] _ in
                self?.core.withLock { $0.unsubscribe(id) }
            }
            return subscription
        }
    }

    func keepAlive() {
        let tooSlow = core.withLock { $0.keepAlive() }
        for stream in tooSlow { stream.finish() }
    }
}
