import CSQLite

/// The SQL of each write. Every function runs inside the batch transaction, under a savepoint.
extension SQLiteWriter {
    /// A live scope's row id and version, `nil` when it does not exist or is a tombstone.
    func liveScope(_ name: String) throws(StoreError) -> (id: Int64, version: Int64)? {
        let statement = try connection.statement("SELECT id, version FROM scopes WHERE name = ?1 AND deleted = 0")
        try statement.bind(name)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(0), statement.int64(1))
    }

    /// Logs one version; returns the scope's row id.
    func append(_ request: AppendRequest) throws(StoreError) -> Int64 {
        guard let scope = try liveScope(request.scope) else { throw .scopeMissing(request.scope) }
        guard request.version == scope.version + 1 else {
            throw .versionConflict(scope: request.scope, expected: scope.version + 1, attempted: request.version)
        }
        // A parent token is only ever given by the writer that logged the parent in this
        // process, so an unknown head (after a restart, after another writer's version) is stale.
        if request.parentToken != 0, head(of: scope.id) != request.parentToken {
            throw .staleBase(scope: request.scope, version: request.version)
        }
        try connection.statement("INSERT INTO changes(scope_id, version, payload) VALUES(?1, ?2, ?3)")
            .bind(scope.id, request.version, request.payload).run()
        try connection.statement("UPDATE scopes SET version = ?1 WHERE id = ?2").bind(request.version, scope.id).run()
        if var record = request.idempotency {
            record.version = request.version
            try insertIdempotency(scopeID: scope.id, scopeName: request.scope, record)
        }
        if request.version % configuration.retentionCheckInterval == 0 { retentionDue.insert(scope.id) }
        return scope.id
    }

    func recordRejection(scope name: String, _ record: IdempotencyRecord) throws(StoreError) {
        guard let scope = try liveScope(name) else { throw .scopeMissing(name) }
        var record = record
        record.version = nil
        try insertIdempotency(scopeID: scope.id, scopeName: name, record)
    }

    /// Inserts a key's outcome; an expired record under the same key is replaced, a live one is a conflict.
    private func insertIdempotency(scopeID: Int64, scopeName: String, _ record: IdempotencyRecord) throws(StoreError) {
        let now = configuration.clock()
        try connection.statement("DELETE FROM idempotency WHERE scope_id = ?1 AND key = ?2 AND created_at < ?3")
            .bind(scopeID, record.key, now - configuration.idempotencyTTLMilliseconds).run()
        do throws(StoreError) {
            try connection.statement(
                """
                INSERT INTO idempotency(scope_id, key, request_digest, status, response, version, created_at)
                VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
                """
            ).bind(scopeID, record.key, record.requestDigest, record.status, record.response, record.version, now).run()
        } catch {
            if case .sqlite(_, let code, _) = error, code & 0xff == SQLITE_CONSTRAINT {
                throw .idempotencyKeyExists(scope: scopeName, key: record.key)
            }
            throw error
        }
    }

    func createScope(_ descriptor: ScopeDescriptor, snapshot: [UInt8]) throws(StoreError) -> Int64 {
        guard !descriptor.name.isEmpty else { throw .invalidArgument("a scope name must not be empty") }
        let lookup = try connection.statement("SELECT id, version, deleted FROM scopes WHERE name = ?1")
        try lookup.bind(descriptor.name)
        let existing: (id: Int64, version: Int64, deleted: Bool)? =
            try lookup.step() ? (lookup.int64(0), lookup.int64(1), lookup.int64(2) != 0) : nil
        lookup.reset()
        let scopeID: Int64
        let version: Int64
        switch existing {
        case .some(let row) where !row.deleted:
            throw .scopeExists(descriptor.name)
        case .some(let tombstone):
            // Versions of a name never repeat: the new incarnation starts after the deleted one.
            scopeID = tombstone.id
            version = tombstone.version + 1
            try connection.statement(
                "UPDATE scopes SET root_class = ?1, root_uuid = ?2, version = ?3, deleted = 0 WHERE id = ?4"
            ).bind(descriptor.rootClass, descriptor.rootUUID, version, scopeID).run()
        case .none:
            version = 0
            try connection.statement(
                "INSERT INTO scopes(name, root_class, root_uuid, version) VALUES(?1, ?2, ?3, ?4)"
            ).bind(descriptor.name, descriptor.rootClass, descriptor.rootUUID, version).run()
            scopeID = connection.lastInsertRowID
        }
        try connection.statement("INSERT INTO snapshots(scope_id, version, payload) VALUES(?1, ?2, ?3)")
            .bind(scopeID, version, snapshot).run()
        // A new life of the name: no lineage is known for it yet.
        batchHeads[scopeID] = 0
        return version
    }

    func deleteScope(_ name: String) throws(StoreError) -> Int64 {
        guard let scope = try liveScope(name) else { throw .scopeMissing(name) }
        for table in ["changes", "snapshots", "idempotency"] {
            try connection.statement("DELETE FROM \(table) WHERE scope_id = ?1").bind(scope.id).run()
        }
        try connection.statement("UPDATE scopes SET deleted = 1 WHERE id = ?1").bind(scope.id).run()
        retentionDue.remove(scope.id)
        return scope.version
    }

    func writeSnapshot(scope name: String, version: Int64, snapshot: [UInt8]) throws(StoreError) {
        guard let scope = try liveScope(name) else { throw .scopeMissing(name) }
        guard version <= scope.version else {
            throw .invalidArgument(
                "snapshot version \(version) of scope '\(name)' is ahead of its version \(scope.version)")
        }
        let latest = try latestSnapshotVersion(scopeID: scope.id) ?? Int64.min
        guard version >= latest else {
            throw .invalidArgument("snapshot version \(version) of scope '\(name)' is older than its latest \(latest)")
        }
        try connection.statement("INSERT OR REPLACE INTO snapshots(scope_id, version, payload) VALUES(?1, ?2, ?3)")
            .bind(scope.id, version, snapshot).run()
        // Snapshots stay back to the retention base: every version still readable has one at or
        // before it (reads of the past replay at most a snapshot interval).
        if let base = try retentionBase(scopeID: scope.id, version: scope.version) {
            try connection.statement("DELETE FROM snapshots WHERE scope_id = ?1 AND version < ?2").bind(scope.id, base)
                .run()
        }
        retentionDue.insert(scope.id)
    }

    /// The newest snapshot at least `retainedChangeSets` versions old: the log is pruned up to it
    /// and older snapshots go, so the oldest readable version is exactly the oldest resumable one.
    /// Nil while no snapshot is that old (nothing is pruned).
    func retentionBase(scopeID: Int64, version: Int64) throws(StoreError) -> Int64? {
        let statement = try connection.statement(
            "SELECT max(version) FROM snapshots WHERE scope_id = ?1 AND version <= ?2")
        try statement.bind(scopeID, version - Int64(configuration.retainedChangeSets))
        defer { statement.reset() }
        return try statement.step() ? statement.optionalInt64(0) : nil
    }

    func latestSnapshotVersion(scopeID: Int64) throws(StoreError) -> Int64? {
        let statement = try connection.statement("SELECT max(version) FROM snapshots WHERE scope_id = ?1")
        try statement.bind(scopeID)
        defer { statement.reset() }
        return try statement.step() ? statement.optionalInt64(0) : nil
    }

    /// Deletes at most `budget` of the oldest change sets of a scope up to its retention base (the
    /// newest snapshot at least N versions old): the last N stay, everything after the latest
    /// snapshot too (recovery replays it), and every retained version has a snapshot at or before
    /// it (reads of the past). `done` when none is left.
    func pruneScope(id scopeID: Int64, budget: Int) throws(StoreError) -> (deleted: Int, done: Bool) {
        let statement = try connection.statement(
            """
            SELECT s.version, (SELECT min(version) FROM changes WHERE scope_id = s.id)
            FROM scopes s WHERE s.id = ?1 AND s.deleted = 0
            """)
        try statement.bind(scopeID)
        guard try statement.step(), let lowest = statement.optionalInt64(1) else {
            statement.reset()
            return (0, true)
        }
        let current = statement.int64(0)
        statement.reset()
        guard let bound = try retentionBase(scopeID: scopeID, version: current), lowest <= bound else {
            return (0, true)
        }
        let upTo = min(bound, lowest + Int64(budget) - 1)
        try connection.statement("DELETE FROM changes WHERE scope_id = ?1 AND version <= ?2").bind(scopeID, upTo).run()
        return (connection.changes, upTo == bound)
    }

    func applyRetention() throws(StoreError) -> Int {
        let statement = try connection.statement("SELECT id FROM scopes WHERE deleted = 0")
        var ids: [Int64] = []
        while try statement.step() { ids.append(statement.int64(0)) }
        statement.reset()
        var total = 0
        for id in ids { total += try pruneScope(id: id, budget: Int.max / 2).deleted }
        retentionDue.removeAll()
        return total
    }

    /// Deletes up to `limit` idempotency records older than the time to keep them.
    func expireIdempotencyRecords(limit: Int) throws(StoreError) -> Int {
        let cutoff = configuration.clock() - configuration.idempotencyTTLMilliseconds
        try connection.statement(
            "DELETE FROM idempotency WHERE rowid IN (SELECT rowid FROM idempotency WHERE created_at < ?1 LIMIT ?2)"
        ).bind(cutoff, min(limit, Int(Int32.max))).run()
        return connection.changes
    }
}
