import Foundation
import JetstreamModel

/// What a ``ScopeEngine`` needs besides its store.
///
/// ```swift
/// var configuration = ScopeEngineConfiguration(schema: .demo)
/// configuration.historyLimit = 500
/// let engine = ScopeEngine(configuration: configuration, store: store, logger: logger)
/// ```
public struct ScopeEngineConfiguration: Sendable {
    /// The model schema change sets are validated against.
    public var schema: Schema
    /// Model limits (objects per scope, fragments per set, string and collection lengths); the
    /// engine checks the fragment count once, before applying, and the model the rest.
    public var limits: Limits
    /// Change sets retained per scope for history and resume (`--history-limit`).
    public var historyLimit: Int
    /// Change-set events kept in memory per scope, so recent resumes never touch the store.
    public var resumeBufferSize: Int
    /// A snapshot of a scope is written every this many change sets, bounding recovery time.
    public var snapshotInterval: Int
    /// Most change sets one history read returns.
    public var maxHistoryPage: Int
    /// Makes the subscriber set of each scope (the gateway's delivers on the connections' loops).
    public var makeSubscribers: @Sendable () -> any ScopeSubscribers
    /// How a final rejection is stored under its idempotency key and answered again: the status
    /// and body the transport answers it with (the gateway's problem+json).
    public var encodeRejection: @Sendable (ScopeError) -> (status: Int, body: [UInt8])
    /// Told of commits, fan-outs and replays (the gateway's Prometheus metrics).
    public var observer: (any ScopeEngineObserver)?
    /// How often a change set that lost a version race to another node (a shared store) is
    /// validated again on the newer state and retried before it is answered as a store failure
    /// (503). 0 for a store only this node writes.
    public var conflictRetries: Int = 0
    /// Milliseconds since 1970: the `"at"` recorded with each accepted change set (a test sets a
    /// manual clock).
    public var wallClock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
    /// How long the store keeps idempotency records (`--idempotency-ttl`), in milliseconds: a keyed
    /// set made longer ago than that is decided from the change-set log.
    public var idempotencyTTLMilliseconds: Int64 = 7 * 86_400_000
    /// Members one scope's presence holds at most (`--max-presence-members`).
    public var maxPresenceMembers = 1000
    /// How presence reaches the other nodes of a shared store; nil on one node.
    public var presenceRelay: (any PresenceRelay)?

    public init(
        schema: Schema, limits: Limits = Limits(), historyLimit: Int = 10_000, resumeBufferSize: Int = 256,
        snapshotInterval: Int = 1000, maxHistoryPage: Int = 10_000
    ) {
        self.schema = schema
        self.limits = limits
        self.historyLimit = historyLimit
        self.resumeBufferSize = resumeBufferSize
        self.snapshotInterval = snapshotInterval
        self.maxHistoryPage = maxHistoryPage
        self.makeSubscribers = { DirectSubscribers() }
        self.encodeRejection = { error in
            var writer = JSONWriter(capacity: 64)
            writer.write(["detail": .string(error.detail)])
            return (422, writer.bytes)
        }
        self.observer = nil
    }
}

/// Hooks for metrics: the engine calls them on its hot paths, so they must be cheap.
public protocol ScopeEngineObserver: Sendable {
    /// A change set became durable `duration` after it was handed to the store.
    func didCommit(after duration: Duration)
    /// A durable change set was handed to every subscriber `duration` after its commit.
    func didFanOut(after duration: Duration)
    /// A request with a known idempotency key was answered with the stored outcome.
    func didReplay()
    /// A change set lost a version race to another node and is validated and appended again.
    func didRetryAfterConflict()
    /// Versions committed by other nodes were read and published, `lag` after their notice came.
    func didCatchUp(records: Int, lag: Duration)
}

extension ScopeEngineObserver {
    public func didRetryAfterConflict() {}
    public func didCatchUp(records: Int, lag: Duration) {}
}
