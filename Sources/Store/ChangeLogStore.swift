/// The durable store behind the gateway: per scope a change log, periodic snapshots, a tombstone after
/// deletion and idempotency records. ``SQLiteStore`` is the embedded implementation; a PostgreSQL one
/// (several gateway nodes sharing one database) implements the same protocol — see `docs/store.md`.
///
/// Contract every implementation keeps:
/// - `append` completes only once its record (and idempotency record) is durable; appends to one scope
///   are applied in submission order, so a writer may pipeline versions v, v+1, … without waiting.
/// - An append whose version is not the scope's version + 1 fails with ``StoreError/versionConflict``.
/// - Versions of a scope name never repeat: re-creating a deleted name continues after its tombstone.
/// - Retention keeps at least the last N change sets of a scope and every one after its latest snapshot.
///
/// ```swift
/// let store: any ChangeLogStore = try SQLiteStore(path: "/var/lib/jetstream/store.sqlite")
/// let v0 = try await store.createScope(descriptor, snapshot: initialState)
/// try await store.append(AppendRequest(scope: descriptor.name, version: v0 + 1, payload: changeSet))
/// ```
public protocol ChangeLogStore: Sendable {
    /// Creates a scope (or re-creates a deleted name) with its initial snapshot; returns the version it
    /// starts at: 0 for a new name, the tombstone's version + 1 for a re-created one.
    func createScope(_ scope: ScopeDescriptor, snapshot: [UInt8]) async throws(StoreError) -> Int64

    /// Deletes a scope: its log, snapshots and idempotency records go; a tombstone keeps its last version,
    /// which is returned.
    func deleteScope(named name: String) async throws(StoreError) -> Int64

    /// Appends a change set; `completion` runs (on a store thread) once it is durable or has failed.
    func append(_ request: AppendRequest, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void)

    /// Stores the outcome of a rejected request that carried an idempotency key (no version is consumed).
    func recordRejection(
        scope: String, _ record: IdempotencyRecord,
        completion: @escaping @Sendable (Result<Void, StoreError>) -> Void)

    /// Stores the state at `version` so that recovery replays only the log after it; older snapshots go.
    func writeSnapshot(scope: String, version: Int64, snapshot: [UInt8]) async throws(StoreError)

    /// The live scope of that name, `nil` when there is none (a tombstone is not live).
    func scope(named name: String) async throws(StoreError) -> ScopeInfo?

    /// Live scopes in name order, those after `after`, at most `limit`.
    func listScopes(after: String?, limit: Int) async throws(StoreError) -> [ScopeInfo]

    /// The change sets after version `after`, oldest first, at most `limit`; throws
    /// ``StoreError/historyTruncated`` when some of them are no longer retained.
    func changes(scope: String, after: Int64, limit: Int) async throws(StoreError) -> ChangePage

    /// The unexpired idempotency record stored under `key` for the scope.
    func idempotencyRecord(scope: String, key: String) async throws(StoreError) -> IdempotencyRecord?

    /// One live scope's latest snapshot and the log after it (`nil` when there is none): what a node
    /// loads lazily, or reloads after a ``StoreError/versionConflict``.
    func recoverScope(named name: String) async throws(StoreError) -> RecoveredScope?

    /// Calls `body` once per live scope, in name order, with its latest snapshot and the log after it.
    func recover(_ body: (RecoveredScope) throws -> Void) async throws

    /// Runs retention over every scope now (it also runs in the background); returns the records pruned.
    func applyRetention() async throws(StoreError) -> Int

    /// Deletes idempotency records older than the configured time to keep them; returns how many.
    func expireIdempotencyRecords() async throws(StoreError) -> Int

    /// Finishes queued writes, then releases the database. Later calls fail with ``StoreError/closed``.
    func close()
}

extension ChangeLogStore {
    /// Appends a change set and returns once it is durable.
    public func append(_ request: AppendRequest) async throws(StoreError) {
        let result = await withCheckedContinuation { continuation in
            append(request) { continuation.resume(returning: $0) }
        }
        try result.get()
    }

    /// Stores a rejected outcome for an idempotency key and returns once it is durable.
    public func recordRejection(scope: String, _ record: IdempotencyRecord) async throws(StoreError) {
        let result = await withCheckedContinuation { continuation in
            recordRejection(scope: scope, record) { continuation.resume(returning: $0) }
        }
        try result.get()
    }
}
