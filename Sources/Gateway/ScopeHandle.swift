import DequeModule
import HTTPServer
import JetstreamModel
import Synchronization

/// One live scope in memory: its single writer's staged state, the durable state readers see,
/// its subscribers and the recent change sets kept encoded for resumes.
///
/// All mutable state sits behind one mutex, held only for short, bounded work: applying one change
/// set (cost proportional to what it touches), publishing one version, registering one subscriber.
/// That mutex is what makes the scope single-writer; different scopes never share it.
final class ScopeHandle: Sendable {
    let name: String
    let rootClass: String
    let subscribers = EventBroadcaster()
    let runtime: Mutex<Runtime>

    struct Runtime: Sendable {
        /// The state including accepted change sets whose records are not durable yet.
        var tip: ScopeState
        /// The durable state: what `GET` returns and what events have been published up to.
        var committed: ScopeState
        /// The latest change sets, encoded, oldest first (at most the resume buffer size).
        var recent: Deque<RecentChangeSet> = []
        /// The oldest version a client may resume from (the store keeps everything after it).
        var oldestResumable: Int
        /// The encoded state of `committed`, made on first demand.
        var cachedState: CachedState?
        var deleted = false
        /// Idempotency keys whose first request is being decided or made durable.
        var idempotencyInFlight: Set<String> = []
    }

    struct RecentChangeSet: Sendable {
        let version: Int
        let payload: [UInt8]
        let event: EncodedEvent
    }

    struct CachedState: Sendable {
        let version: Int
        let json: [UInt8]
    }

    init(name: String, state: ScopeState, oldestResumable: Int) {
        self.name = name
        self.rootClass = state.rootClass.name
        runtime = Mutex(Runtime(tip: state, committed: state, oldestResumable: oldestResumable))
    }

    /// The durable state (an immutable snapshot; the writer goes on building the next version).
    var committedState: ScopeState { runtime.withLock { $0.committed } }

    /// The encoded state at the committed version, encoded at most once per version.
    func stateJSON() -> (version: Int, json: [UInt8]) {
        let (state, cached) = runtime.withLock { ($0.committed, $0.cachedState) }
        if let cached, cached.version == state.version { return (cached.version, cached.json) }
        // Encode outside the lock: a large scope must not hold up its writer.
        let json = ScopeEvents.stateJSON(name: name, state: state)
        runtime.withLock { runtime in
            if runtime.committed.version == state.version {
                runtime.cachedState = CachedState(version: state.version, json: json)
            }
        }
        return (state.version, json)
    }
}
