/// A ``ChangeLogStore`` that several gateway nodes share (PostgreSQL): besides the log itself, it
/// tells a node when other nodes have committed, so the node can catch up the scopes it hosts.
///
/// Notices are hints, never the data: a node reads what changed from the log
/// (``ChangeLogStore/changes(scope:after:limit:)``), and ``ChangeNotice/everything`` — after a
/// reconnect, and periodically as a safety net — asks it to compare every scope with
/// ``scopeVersions()``. A lost notice therefore delays a change by at most one poll interval; it
/// never loses it.
///
/// ```swift
/// store.follow { notice in follower.enqueue(notice) }      // on the store's listener thread
/// let versions = try await store.scopeVersions()           // live scopes and tombstones
/// ```
public protocol SharedChangeLogStore: ChangeLogStore {
    /// Starts delivering notices to `handler` (on a store thread; it must not block). Called once.
    func follow(_ handler: @escaping @Sendable (ChangeNotice) -> Void)

    /// Every scope the store knows, live or deleted, with its current (or tombstone) version.
    func scopeVersions() async throws(StoreError) -> [ScopeVersion]

    /// For many scopes at once (one round trip), the change sets after each one's version, oldest
    /// first, at most `limit` per scope. A scope that is missing, or whose history no longer
    /// reaches back, is simply absent or short: the caller reads that one alone with
    /// ``ChangeLogStore/changes(scope:after:limit:)`` to learn why.
    func changes(after versions: [String: Int64], limit: Int) async throws(StoreError) -> [String: [ChangeRecord]]

    /// Its counters now: batches, connections up, notifications (for metrics and tests).
    var statistics: SharedStoreStatistics { get }
}

/// Counters of a shared store, cumulative since it opened (connections: up now, by role).
///
/// ```swift
/// let statistics = store.statistics
/// print(statistics.committedOperations, statistics.notificationsReceived)
/// ```
public struct SharedStoreStatistics: Sendable, Equatable {
    /// Batches committed (one transaction and one round trip each).
    public var batches = 0
    public var committedOperations = 0
    public var largestBatch = 0
    /// Batches that failed whole (the database was unreachable, or the transaction aborted).
    public var failedBatches = 0
    /// Notifications received on the LISTEN connection (this node's own included).
    public var notificationsReceived = 0
    /// Connections established again after a loss (any role).
    public var reconnects = 0
    /// Connections currently up, by role.
    public var writersUp = 0
    public var readersUp = 0
    public var listenerUp = false

    public init() {}
}

/// What another node (or this one) committed, as announced after its commit.
public enum ChangeNotice: Sendable, Equatable {
    /// These scopes reached at least these versions (created, or changed).
    case changed([ScopeVersion])
    /// Something may have been missed (a reconnect, the periodic poll, an announcement too large
    /// for one notice): compare every scope.
    case everything
}

/// A scope's name and version as the shared store holds it; `deleted` for a tombstone.
public struct ScopeVersion: Sendable, Hashable {
    public var name: String
    public var version: Int64
    public var deleted: Bool

    public init(name: String, version: Int64, deleted: Bool = false) {
        self.name = name
        self.version = version
        self.deleted = deleted
    }
}

extension ChangeNotice {
    /// The wire form of a notice (PostgreSQL `NOTIFY` payload, at most 8000 bytes): comma-separated
    /// `name:version`, a deletion as `!name:version`; `*` for ``everything`` (also when the list
    /// would not fit). Scope names never contain `:`, `,`, `!` or `*` (the gateway's name rule),
    /// though they may begin with `-`.
    ///
    /// ```swift
    /// ChangeNotice.changed([ScopeVersion(name: "a", version: 4)]).payload(limit: 8000)   // "a:4"
    /// ```
    public func payload(limit: Int) -> String {
        guard case .changed(let versions) = self else { return "*" }
        var text = ""
        var length = 0
        for entry in versions {
            let item = "\(entry.deleted ? "!" : "")\(entry.name):\(entry.version)"
            length += item.utf8.count + (text.isEmpty ? 0 : 1)
            if length > limit { return "*" }
            if !text.isEmpty { text += "," }
            text += item
        }
        return text
    }

    /// Parses ``payload(limit:)``; anything malformed reads as ``everything`` (a hint that cannot be
    /// read is safest as "compare all").
    public init(payload: String) {
        guard payload != "*", !payload.isEmpty else {
            self = .everything
            return
        }
        var versions: [ScopeVersion] = []
        for item in payload.split(separator: ",") {
            var text = item[...]
            let deleted = text.first == "!"
            if deleted { text = text.dropFirst() }
            guard let colon = text.lastIndex(of: ":"), let version = Int64(text[text.index(after: colon)...]),
                colon > text.startIndex
            else {
                self = .everything
                return
            }
            versions.append(ScopeVersion(name: String(text[..<colon]), version: version, deleted: deleted))
        }
        self = .changed(versions)
    }
}
