import Foundation
import HTTPServer
import JetstreamModel
import Logging
import Store
import Synchronization

/// Every live scope of this node: one writer per scope, readers on immutable snapshots, each
/// accepted change set encoded once for every subscriber. Scopes proceed independently; the store's
/// commit thread batches their durable appends into shared fsyncs.
///
/// ```swift
/// let hub = ScopeHub(configuration: GatewayConfiguration(schema: .demo), store: store, logger: logger)
/// try await hub.recover()
/// ```
public final class ScopeHub: Sendable {
    public let configuration: GatewayConfiguration
    let store: any ChangeLogStore
    let logger: Logger
    let scopes = Mutex<[String: ScopeHandle]>([:])
    /// Prometheus metrics of this hub (served at `/metrics`).
    public let metrics = GatewayMetrics()
    /// Readiness and drain state (`/readyz`, SIGTERM).
    let drainState = DrainState()

    public init(configuration: GatewayConfiguration, store: any ChangeLogStore, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
    }

    var schema: Schema { configuration.schema }

    func handle(named name: String) -> ScopeHandle? {
        scopes.withLock { $0[name] }
    }

    /// The live scope `name`, or a `not-found` problem.
    func existingHandle(_ name: String) throws(Problem) -> ScopeHandle {
        try ScopeName.validate(name)
        guard let handle = handle(named: name) else {
            throw Problem(.notFound, detail: "no scope named '\(name)'")
        }
        return handle
    }

    /// The number of live scopes.
    public var scopeCount: Int { scopes.withLock { $0.count } }

    /// One page of scopes in name order after `after`; `next` names the last one when more follow.
    func list(
        after: String?, limit: Int, where visible: (String) -> Bool = { _ in true }
    ) -> (page: [(name: String, handle: ScopeHandle)], next: String?) {
        let all = scopes.withLock { $0 }
        let names = all.keys.filter { (after == nil || $0 > after!) && visible($0) }.sorted()
        let page = names.prefix(limit).map { (name: $0, handle: all[$0]!) }
        return (page, names.count > limit ? page.last?.name : nil)
    }

    /// Creates scope `name` with a root of `rootClassName` (the class the schema's scope rules give
    /// for the name) carrying `properties`.
    func create(
        name: String, rootClassName: String, rootUUID: UUID?, properties: JSONObject
    ) async throws(Problem) -> ScopeHandle {
        try ScopeName.validate(name)
        guard let expected = schema.rootClass(forScope: name) else {
            throw Problem(.notFound, detail: "no scope rule of the schema matches the name '\(name)'")
        }
        guard rootClassName == expected.name else {
            let reply = FragmentReply.error(
                FragmentError(
                    .unknownClass,
                    "scopes named '\(name)' have a root of class \(expected.name), not \(rootClassName)"))
            throw Problem(
                .invalidChangeSet, detail: "the root object was rejected; no scope was created",
                extensions: ["fragmentReplies": .array([reply.jsonValue])])
        }
        if handle(named: name) != nil { throw Problem(.scopeExists, detail: "scope '\(name)' already exists") }
        let initial: ScopeState
        do {
            initial = try ScopeState.create(
                rootUUID: rootUUID ?? UUID(), rootClass: expected, properties: properties, schema: schema,
                limits: configuration.limits)
        } catch {
            throw Problem(
                .invalidChangeSet, detail: "the root object was rejected; no scope was created",
                extensions: ["fragmentReplies": .array([FragmentReply.error(error).jsonValue])])
        }
        let descriptor = ScopeDescriptor(name: name, rootClass: expected.name, rootUUID: initial.rootUUID.wireString)
        let version: Int64
        do {
            version = try await store.createScope(descriptor, snapshot: ScopeEvents.snapshotJSON(state: initial))
        } catch .scopeExists {
            throw Problem(.scopeExists, detail: "scope '\(name)' already exists")
        } catch {
            throw storeProblem(error)
        }
        let state = initial.withVersion(Int(version))
        let handle = ScopeHandle(name: name, state: state, oldestResumable: state.version)
        scopes.withLock { $0[name] = handle }
        logger.info("scope created", metadata: ["scope": "\(name)", "version": "\(version)"])
        return handle
    }

    /// Deletes scope `name`: it disappears at once for new requests, change sets already accepted
    /// finish first, then its open streams get `event: deleted` and end.
    func delete(name: String) async throws(Problem) {
        let handle = try existingHandle(name)
        let wasLive = handle.runtime.withLock { runtime in
            defer { runtime.deleted = true }
            return !runtime.deleted
        }
        guard wasLive else { throw Problem(.notFound, detail: "no scope named '\(name)'") }
        scopes.withLock { scopes in
            if scopes[name] === handle { scopes[name] = nil }
        }
        let version: Int64
        do {
            version = try await store.deleteScope(named: name)
        } catch {
            throw storeProblem(error)
        }
        let data = Array(#"{"name":"\#(name)","version":\#(version)}"#.utf8)
        handle.runtime.withLock { _ in
            handle.subscribers.broadcast(encoded: ScopeEvents.event("deleted", id: nil, json: data))
            handle.subscribers.closeAll()
        }
        logger.info("scope deleted", metadata: ["scope": "\(name)", "version": "\(version)"])
    }

    func storeProblem(_ error: StoreError) -> Problem {
        logger.error("store failed", metadata: ["error": "\(error)"])
        return Problem(.storeUnavailable, detail: "the store failed: \(error)")
    }
}
