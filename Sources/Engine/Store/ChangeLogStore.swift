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

    /// Appends a change set; `completion` runs (on a store thread) once it is durable or has failed,
    /// never on the caller's thread, so a caller may append while holding a lock the completion takes.
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

    /// One live scope as it was at `version` (`nil` when there is none): the newest snapshot at or
    /// before it and the change sets after that snapshot up to it, read together, so rebuilding a
    /// past state costs at most a snapshot interval of replay. A `version` ahead of the scope's
    /// reads its current state: the caller compares with ``RecoveredScope/info``. Throws
    /// ``StoreError/historyTruncated`` (naming the oldest readable version) when `version` is
    /// older than what the retained snapshots and log rebuild.
    func scope(named name: String, at version: Int64) async throws(StoreError) -> RecoveredScope?

    /// Calls `body` once per live scope, in name order, with its latest snapshot and the log after it.
    func recover(_ body: (RecoveredScope) throws -> Void) async throws

    /// What the store keeps about itself under `key` (nil when nothing): the engine records the
    /// schema it serves under `schema`.
    func metadata(key: String) async throws(StoreError) -> [UInt8]?

    /// The metadata whose keys start with `prefix`, in key order.
    func metadataEntries(prefix: String) async throws(StoreError) -> [(key: String, value: [UInt8])]

    /// Stores `value` under `key`, durably, replacing what was there; nil removes the key.
    func writeMetadata(key: String, value: [UInt8]?) async throws(StoreError)

    /// Runs retention over every scope now (it also runs in the background); returns the records pruned.
    func applyRetention() async throws(StoreError) -> Int

    /// Deletes idempotency records older than the configured time to keep them; returns how many.
    func expireIdempotencyRecords() async throws(StoreError) -> Int

    /// Finishes queued writes, then releases the database. Later calls fail with ``StoreError/closed``.
    func close()

    /// Why the store cannot serve right now (a shared database out of reach), nil when it can.
    var unavailability: String? { get }
}

extension ChangeLogStore {
    /// An embedded store is available while it is open.
    public var unavailability: String? { nil }

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

/// What the store keeps about a scope besides its versions: its name and its root object's identity.
///
/// ```swift
/// let version = try await store.createScope(
///     ScopeDescriptor(name: "canvas-1", rootClass: "Canvas", rootUUID: uuid), snapshot: stateBytes)
/// ```
public struct ScopeDescriptor: Sendable, Hashable {
    /// The scope's name (the gateway validates the character set; the store takes any non-empty string).
    public var name: String
    /// The class name of the scope's root object.
    public var rootClass: String
    /// The root object's UUID, as text.
    public var rootUUID: String

    public init(name: String, rootClass: String, rootUUID: String) {
        self.name = name
        self.rootClass = rootClass
        self.rootUUID = rootUUID
    }
}

/// A live scope as the store sees it: its descriptor, its current version and how far back its history goes.
///
/// ```swift
/// if let info = try await store.scope(named: "canvas-1"), info.canResume(from: lastEventID) { … }
/// ```
public struct ScopeInfo: Sendable, Hashable {
    public var descriptor: ScopeDescriptor
    /// The version of the last accepted change set (or of the creation, before any).
    public var version: Int64
    /// The lowest change-set version still in the log, `nil` when the log holds none.
    public var lowestRetainedVersion: Int64?

    public init(descriptor: ScopeDescriptor, version: Int64, lowestRetainedVersion: Int64?) {
        self.descriptor = descriptor
        self.version = version
        self.lowestRetainedVersion = lowestRetainedVersion
    }

    public var name: String { descriptor.name }

    /// The oldest version V from which `changes(after: V)` returns every change set up to ``version``.
    public var oldestResumableVersion: Int64 { (lowestRetainedVersion ?? version + 1) - 1 }

    /// Whether a client at version `version` can catch up from the log (otherwise it needs a full `reset`).
    public func canResume(from version: Int64) -> Bool {
        version >= oldestResumableVersion && version <= self.version
    }
}

/// What a restart needs to rebuild one scope: its latest snapshot and the change sets logged after it.
///
/// ```swift
/// try await store.recover { scope in
///     var state = try ScopeState(decoding: scope.snapshot)
///     for record in scope.tail { try state.apply(decoding: record.payload) }
/// }
/// ```
public struct RecoveredScope: Sendable, Hashable {
    public var info: ScopeInfo
    /// The version the snapshot is at; replaying ``tail`` brings it to `info.version`.
    public var snapshotVersion: Int64
    public var snapshot: [UInt8]
    /// The change sets after ``snapshotVersion``, contiguous, oldest first.
    public var tail: [ChangeRecord]

    public init(info: ScopeInfo, snapshotVersion: Int64, snapshot: [UInt8], tail: [ChangeRecord]) {
        self.info = info
        self.snapshotVersion = snapshotVersion
        self.snapshot = snapshot
        self.tail = tail
    }
}

extension RecoveredScope {
    /// The scope as a store read it, checked: the tail runs without a gap from the snapshot to the
    /// scope's version. A gap is ``StoreError/corrupt(path:message:)`` naming the scope and the
    /// versions (`store` names the file or database), never papered over.
    package init(
        checking info: ScopeInfo, snapshotVersion: Int64, snapshot: [UInt8], tail: [ChangeRecord], store: String,
        through: Int64? = nil
    ) throws(StoreError) {
        let through = through ?? info.version
        var expected = snapshotVersion + 1
        for record in tail {
            guard record.version == expected else {
                throw .corrupt(
                    path: store, message: "scope '\(info.name)' log jumps from \(expected - 1) to \(record.version)")
            }
            expected += 1
        }
        guard expected - 1 == through else {
            throw .corrupt(
                path: store,
                message:
                    "scope '\(info.name)' should be read up to version \(through) but its log ends at \(expected - 1)")
        }
        self.init(info: info, snapshotVersion: snapshotVersion, snapshot: snapshot, tail: tail)
    }
}

/// One change set to make durable: the scope, its new version (the current one + 1), the payload and,
/// when the request carried an `Idempotency-Key`, the outcome to replay — all in one commit.
///
/// ```swift
/// try await store.append(AppendRequest(scope: "canvas-1", version: 42, payload: Array(json.utf8)))
/// ```
public struct AppendRequest: Sendable, Hashable {
    public var scope: String
    public var version: Int64
    public var payload: [UInt8]
    /// Stored with the change set; its ``IdempotencyRecord/version`` is set to ``version``.
    public var idempotency: IdempotencyRecord?
    /// The lineage of a pipelined writer: ``token`` names this version, ``parentToken`` the version
    /// it was built on. A writer that appends version v+1 before v is durable sets both; when v's
    /// append fails, or another writer's v got there first, the store refuses v+1 with
    /// ``StoreError/staleBase(scope:version:)`` instead of logging it on a version it was not built
    /// on. 0 means none: the version number alone is checked. A parent token the store does not
    /// know as the scope's head (say, after a restart) is refused too.
    public var parentToken: UInt64
    public var token: UInt64

    public init(
        scope: String, version: Int64, payload: [UInt8], idempotency: IdempotencyRecord? = nil,
        parentToken: UInt64 = 0, token: UInt64 = 0
    ) {
        self.scope = scope
        self.version = version
        self.payload = payload
        self.idempotency = idempotency
        self.parentToken = parentToken
        self.token = token
    }
}

/// One accepted change set as the log keeps it: its version and the gateway's encoded payload.
///
/// ```swift
/// for record in page.records { send(event: "changeset", id: record.version, data: record.payload) }
/// ```
public struct ChangeRecord: Sendable, Hashable {
    public var version: Int64
    /// Opaque bytes (the gateway stores the normalised fragments and removed UUIDs as JSON).
    public var payload: [UInt8]

    public init(version: Int64, payload: [UInt8]) {
        self.version = version
        self.payload = payload
    }
}

/// A page of history: the change sets after a version, oldest first, and the scope's current version.
///
/// ```swift
/// let page = try await store.changes(scope: "canvas-1", after: 41, limit: 100)
/// let more = page.records.last.map { $0.version < page.currentVersion } ?? false
/// ```
public struct ChangePage: Sendable, Hashable {
    public var records: [ChangeRecord]
    /// The scope's version when the page was read (the same read transaction).
    public var currentVersion: Int64

    public init(records: [ChangeRecord], currentVersion: Int64) {
        self.records = records
        self.currentVersion = currentVersion
    }
}
