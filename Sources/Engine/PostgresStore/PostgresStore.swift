import Dispatch
import Logging
import Store
import Synchronization

/// The shared ``Store/ChangeLogStore``: PostgreSQL through libpq, for several gateway nodes on one
/// database. Every rule of the embedded store holds across nodes — durable before answered (the
/// completion runs after `COMMIT` returned), no silent overwrite (each append locks its scope's
/// row and checks the version and the lineage), submission order per scope, versions never
/// repeat (tombstones are rows), the resume rule, retention at snapshots, idempotency records in
/// the same transaction as their change set.
///
/// Writes go to one of a few writer connections chosen by a hash of the scope name (so one scope's
/// appends stay in submission order), each committing whatever is queued as one pipelined
/// transaction. After each commit one `NOTIFY` tells the other nodes which scopes moved; a
/// listener connection turns those into ``Store/ChangeNotice``s (see ``follow(_:)``).
///
/// ```swift
/// let store = try PostgresStore(url: "postgres://jetstream@127.0.0.1:5432/jetstream")
/// let v0 = try await store.createScope(descriptor, snapshot: initialState)
/// try await store.append(AppendRequest(scope: descriptor.name, version: v0 + 1, payload: bytes))
/// ```
public final class PostgresStore: SharedChangeLogStore {
    public let target: PGTarget
    public let configuration: Configuration
    let logger: Logger
    let statisticsState = PostgresCounters()
    private let writers: [PostgresWriter]
    let readers: PostgresReaders
    let listener: PostgresListener
    private let waitBound: WriteWaitBound
    let presencePublisher: PostgresPresencePublisher
    /// This store's name in its presence texts (random per start; see PostgresStore+Presence.swift).
    public let presenceNodeID = String(UInt64.random(in: 1...UInt64.max), radix: 16)
    private let closed = Atomic<Bool>(false)

    /// Connects (waiting up to the statement timeout), creates or migrates the schema, and starts
    /// the writer, reader and listener connections.
    public init(
        url: String, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "jetstream.store")
    ) throws(StoreError) {
        let configuration = try configuration.validated()
        let target = try PGTarget(url)
        self.target = target
        self.configuration = configuration
        self.logger = logger
        do throws(StoreError) {
            let setup = try PGConnection(
                target: target, applicationName: "\(configuration.applicationName)-setup",
                timeout: configuration.statementTimeout)
            if configuration.readsOnly {
                try PostgresSchema.requireExisting(setup)
            } else {
                try PostgresSchema.migrate(setup)
            }
        } catch .unavailable(let message) {
            throw .openFailed(path: target.description, message: message)
        }
        let statistics = statisticsState
        writers = (0..<configuration.writerConnections).map { index in
            PostgresWriter(
                index: index, target: target, configuration: configuration, statistics: statistics, logger: logger)
        }
        readers = PostgresReaders(
            count: configuration.readerConnections, target: target, configuration: configuration,
            statistics: statistics, logger: logger)
        let expiryWriter = writers[0]
        let maintains = !configuration.readsOnly
        listener = PostgresListener(
            target: target, configuration: configuration, statistics: statistics, logger: logger
        ) {
            // Every node expires old keys now and then; the DELETE is idempotent, so nodes that
            // overlap only repeat a cheap statement.
            if maintains { _ = expiryWriter.queue.enqueue(.expireIdempotencyRecords { _ in }) }
        }
        presencePublisher = PostgresPresencePublisher(target: target, configuration: configuration, logger: logger)
        waitBound = WriteWaitBound(queues: writers.map(\.queue), limit: configuration.unavailableAfter)
        logger.info("PostgreSQL store open", metadata: ["database": "\(target)"])
    }

    deinit { close() }

    /// Commits what is queued, then closes every connection. Later calls fail with ``StoreError/closed``.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        waitBound.cancel()
        listener.close()
        presencePublisher.close()
        for writer in writers { writer.close() }
        readers.close()
    }

    /// Counters: batches, operations, notifications, connections up.
    public var statistics: SharedStoreStatistics { statisticsState.withLock { $0 } }

    /// Why the store cannot serve now (the listener's connection is down, or the database has not
    /// answered it for `unavailableAfter`), nil when it can.
    public var unavailability: String? { listener.unavailability }

    // MARK: Following other nodes

    public func follow(_ handler: @escaping @Sendable (ChangeNotice) -> Void) {
        listener.follow(handler)
    }

    public func scopeVersions() async throws(StoreError) -> [ScopeVersion] {
        try await readers.read { connection throws(StoreError) in
            let result = try connection.query(PostgresStatements.scopeVersions, [])
            return (0..<result.rowCount).map { row in
                ScopeVersion(
                    name: result.string(row: row, column: 0), version: result.int64(row: row, column: 1),
                    deleted: result.bool(row: row, column: 2))
            }
        }
    }

    public func changes(
        after versions: [String: Int64], limit: Int
    ) async throws(StoreError) -> [String: [ChangeRecord]] {
        guard limit >= 0 else { throw .invalidArgument("limit must be ≥ 0, got \(limit)") }
        guard !versions.isEmpty else { return [:] }
        let wanted = versions.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        return try await readers.read { connection throws(StoreError) in
            let result = try connection.query(
                PostgresStatements.changesOfMany, [.text(wanted), .int64(Int64(min(limit, Int(Int32.max))))])
            var pages: [String: [ChangeRecord]] = [:]
            for row in 0..<result.rowCount {
                pages[result.string(row: row, column: 0), default: []].append(
                    ChangeRecord(version: result.int64(row: row, column: 1), payload: result.bytes(row: row, column: 2))
                )
            }
            return pages
        }
    }

    // MARK: Writes

    /// The writer of a scope: a stable hash of its name (FNV-1a), the same on every run.
    private func writer(for scope: String) -> PostgresWriter {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in scope.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return writers[Int(hash % UInt64(writers.count))]
    }

    private func submit(_ operation: WriteOperation, scope: String) {
        // Never on the caller's thread: callers append while holding their own locks.
        // A database known to be out of reach refuses at once rather than after the bound.
        if let reason = listener.unavailability {
            DispatchQueue.global().async { operation.fail(.unavailable(reason)) }
            return
        }
        if !writer(for: scope).queue.enqueue(operation) { DispatchQueue.global().async { operation.fail(.closed) } }
    }

    private func perform<Value: Sendable>(
        scope: String, _ operation: (@escaping WriteOperation.Completion<Value>) -> WriteOperation
    ) async throws(StoreError) -> Value {
        let result = await withCheckedContinuation { continuation in
            submit(operation { continuation.resume(returning: $0) }, scope: scope)
        }
        return try result.get()
    }

    public func append(_ request: AppendRequest, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        submit(.append(request, completion), scope: request.scope)
    }

    public func recordRejection(
        scope: String, _ record: IdempotencyRecord, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void
    ) {
        submit(.recordRejection(scope: scope, record, completion), scope: scope)
    }

    public func createScope(_ scope: ScopeDescriptor, snapshot: [UInt8]) async throws(StoreError) -> Int64 {
        guard !scope.name.isEmpty else { throw .invalidArgument("a scope name must not be empty") }
        return try await perform(scope: scope.name) { .createScope(scope, snapshot: snapshot, $0) }
    }

    public func deleteScope(named name: String) async throws(StoreError) -> Int64 {
        try await perform(scope: name) { .deleteScope(name, $0) }
    }

    public func writeSnapshot(scope: String, version: Int64, snapshot: [UInt8]) async throws(StoreError) {
        try await perform(scope: scope) { .writeSnapshot(scope: scope, version: version, snapshot: snapshot, $0) }
    }

    public func writeMetadata(key: String, value: [UInt8]?) async throws(StoreError) {
        try await perform(scope: "") { .writeMetadata(key: key, value: value, $0) }
    }

    public func applyRetention() async throws(StoreError) -> Int {
        try await perform(scope: "") { .applyRetention($0) }
    }

    public func expireIdempotencyRecords() async throws(StoreError) -> Int {
        try await perform(scope: "") { .expireIdempotencyRecords($0) }
    }
}
