import JetstreamModel
import Synchronization

/// One live scope in memory: its single writer's staged state, the durable state readers see,
/// its subscribers and the recent change sets kept encoded for resumes.
///
/// All mutable state sits behind one mutex, held only for short, bounded work: applying one change
/// set (cost proportional to what it touches), publishing one version, registering one subscriber.
/// That mutex is what makes the scope single-writer; different scopes never share it.
public final class ScopeHandle: Sendable {
    public let name: String
    public let rootClass: String
    let subscribers: any ScopeSubscribers
    let runtime: Mutex<Runtime>

    struct Runtime: Sendable {
        /// The state including accepted change sets whose records are not durable yet.
        var tip: ScopeState
        /// The durable state: what reads return and what events have been published up to.
        var committed: ScopeState
        /// The latest change sets, encoded (at most the resume buffer size).
        var recent: RecentChangeSets
        /// The oldest version a client may resume from (the store keeps everything after it).
        var oldestResumable: Int
        /// The encoded state of `committed`, made on first demand.
        var cachedState: EncodedState?
        var deleted = false
        /// Idempotency keys whose first request is being decided or made durable.
        var idempotencyInFlight: Set<String> = []

        /// The encoded committed state, encoded at most once per version.
        mutating func encodedState(name: String) -> EncodedState {
            if let cachedState, cachedState.version == committed.version { return cachedState }
            let made = EncodedState(
                version: committed.version, json: ScopeEncoding.stateJSON(name: name, state: committed))
            cachedState = made
            return made
        }
    }

    init(
        name: String, state: ScopeState, oldestResumable: Int, resumeBufferSize: Int, subscribers: any ScopeSubscribers
    ) {
        self.name = name
        self.rootClass = state.rootClass.name
        self.subscribers = subscribers
        runtime = Mutex(
            Runtime(
                tip: state, committed: state, recent: RecentChangeSets(capacity: resumeBufferSize),
                oldestResumable: oldestResumable))
    }

    /// The durable state (an immutable snapshot; the writer goes on building the next version).
    public var committedState: ScopeState { runtime.withLock { $0.committed } }

    /// The durable version.
    public var version: Int { runtime.withLock { $0.committed.version } }

    /// The number of subscribers following the scope.
    public var subscriberCount: Int { subscribers.count }

    /// The encoded state at the committed version, encoded at most once per version (outside the
    /// lock: a large scope must not hold up its writer). A transport keeps its own encodings of
    /// it in ``EncodedState/derived(_:)`` (the gateway's gzip), so they too are made once per version.
    public func encodedState() -> EncodedState {
        let (state, cached) = runtime.withLock { ($0.committed, $0.cachedState) }
        if let cached, cached.version == state.version { return cached }
        let made = EncodedState(version: state.version, json: ScopeEncoding.stateJSON(name: name, state: state))
        return runtime.withLock { runtime in
            if runtime.committed.version == state.version {
                if let raced = runtime.cachedState, raced.version == state.version { return raced }
                runtime.cachedState = made
            }
            return made
        }
    }
}

/// A scope's state at one version, encoded as `{"name","version","rootUUID","fragments"}`, with
/// room for one encoding of it a transport derives (made once, on first demand).
public final class EncodedState: Sendable {
    public let version: Int
    public let json: [UInt8]
    private let derivedEncoding = Mutex<(any Sendable)?>(nil)

    init(version: Int, json: [UInt8]) {
        self.version = version
        self.json = json
    }

    /// The transport's derived encoding (for example gzip), made by `make` on the first call and kept.
    public func derived<Value: Sendable>(_ make: ([UInt8]) -> Value) -> Value {
        if let cached = derivedEncoding.withLock({ $0 }) as? Value { return cached }
        let made = make(json)
        derivedEncoding.withLock { $0 = made }
        return made
    }
}
