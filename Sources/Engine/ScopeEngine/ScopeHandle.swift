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
        /// Submissions waiting, in their order, for one catch-up from a shared store and to be
        /// judged again: they lost a version race to another node, or were refused on this copy
        /// (ScopeEngine+Revalidation.swift); whether that round is scheduled.
        var revalidations: [Revalidation] = []
        var revalidationScheduled = false
        /// Versions handed to the store and not yet durable, in staging order.
        var staged: [StagedVersion] = []
        /// The lineage token of `tip` and of `committed` (0: none known, the store checks nothing).
        var tipToken: UInt64 = 0
        var committedToken: UInt64 = 0
        /// The newest version a shared store announced for this scope that this copy has not read
        /// yet: the follower leaves a copy no client of this node uses behind (a cold copy) and
        /// only notes how far (ScopeEngine+ColdCopies.swift).
        var announcedVersion = 0
        /// When the first version this copy has not read was announced (the lag a catch-up ends).
        var announcedAt: ContinuousClock.Instant?
        /// When a change set was last staged here: a copy written through this node stays followed.
        var lastStaged: ContinuousClock.Instant?
        /// Who is here, by client id (ScopeEngine+Presence.swift); not part of any version.
        var presence: [String: PresenceMember] = [:]

        /// A staged version: its token, the token of the state it was built on, its state and
        /// the payload logged for it (which tells it apart when a node reads it back from a shared
        /// store before its own append completed).
        struct StagedVersion: Sendable {
            var token: UInt64
            var parent: UInt64
            var state: ScopeState
            var payload: [UInt8]
        }

        /// Stages `state` on the tip; returns its append's lineage (parent, token).
        mutating func stage(_ state: ScopeState, payload: [UInt8]) -> (parent: UInt64, token: UInt64) {
            let token = LineageToken.next()
            let parent = tipToken
            staged.append(StagedVersion(token: token, parent: parent, state: state, payload: payload))
            lastStaged = .now
            tip = state
            tipToken = token
            return (parent, token)
        }

        /// The append of `token` is durable: it leaves the staged versions.
        mutating func didCommit(token: UInt64) {
            // Appends commit in the order they were staged, so it is nearly always the first
            // (which leaves without the others being moved one by one).
            if staged.first?.token == token {
                staged.removeFirst()
            } else {
                staged.removeAll { $0.token == token }
            }
            committedToken = token
        }

        /// A version committed elsewhere took the slots up to `version`: the staged versions at or
        /// below it, and every version staged on them, can no longer be logged (the store refuses
        /// them) and leave now; the tip falls back to the newest version still standing, or to
        /// `committed`.
        mutating func supersedeStaged(upTo version: Int) {
            dropStaged { $0.state.version <= version }
        }

        /// The append of `token` failed: it and every version staged on it (directly or not)
        /// leave, and the tip falls back to the newest version still standing — a version staged
        /// after the failure on the durable state stays.
        mutating func didFail(token: UInt64) {
            guard staged.contains(where: { $0.token == token }) else { return }
            dropStaged { $0.token == token }
        }

        /// Drops the staged versions `isDropped` picks and every version staged on one of them
        /// (staging order puts parents first); the tip falls back to the newest one left, or to
        /// `committed`.
        private mutating func dropStaged(where isDropped: (StagedVersion) -> Bool) {
            var dropped: Set<UInt64> = []
            staged.removeAll { version in
                guard isDropped(version) || dropped.contains(version.parent) else { return false }
                dropped.insert(version.token)
                return true
            }
            if let newest = staged.last {
                tip = newest.state
                tipToken = newest.token
            } else {
                tip = committed
                tipToken = committedToken
            }
        }

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

    /// Whether a shared store announced versions this copy has not read: the copy is cold (no
    /// client of this node used it lately) and is caught up on its next use
    /// (``ScopeEngine/current(_:)``).
    public var lagsStore: Bool { runtime.withLock { $0.announcedVersion > $0.committed.version } }

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
