/// Reads run on the reader connection, each in one read transaction so that what they combine (a
/// scope's version and its log) is consistent. They are synchronous: a local SQLite read is short.
extension SQLiteStore {
    public func scope(named name: String) throws(StoreError) -> ScopeInfo? {
        try read { connection throws(StoreError) in
            let statement = try connection.statement(Self.scopeInfoSelect + " WHERE s.name = ?1 AND s.deleted = 0")
            try statement.bind(name)
            defer { statement.reset() }
            return try statement.step() ? Self.scopeInfo(statement) : nil
        }
    }

    public func metadata(key: String) throws(StoreError) -> [UInt8]? {
        try read { connection throws(StoreError) in
            let statement = try connection.statement("SELECT value FROM metadata WHERE key = ?1")
            try statement.bind(key)
            defer { statement.reset() }
            return try statement.step() ? statement.blob(0) : nil
        }
    }

    public func metadataEntries(prefix: String) throws(StoreError) -> [(key: String, value: [UInt8])] {
        try read { connection throws(StoreError) in
            // A range rather than LIKE: no wildcard in `prefix` to escape.
            let statement = try connection.statement(
                "SELECT key, value FROM metadata WHERE key >= ?1 AND key < ?2 ORDER BY key")
            try statement.bind(prefix, prefix + "\u{10FFFF}")
            defer { statement.reset() }
            var entries: [(key: String, value: [UInt8])] = []
            while try statement.step() { entries.append((statement.text(0), statement.blob(1))) }
            return entries
        }
    }

    public func listScopes(after: String?, limit: Int) throws(StoreError) -> [ScopeInfo] {
        guard limit >= 0 else { throw .invalidArgument("limit must be ≥ 0, got \(limit)") }
        return try read { connection throws(StoreError) in
            let statement = try connection.statement(
                Self.scopeInfoSelect + " WHERE s.deleted = 0 AND s.name > ?1 ORDER BY s.name LIMIT ?2")
            try statement.bind(after ?? "", limit)
            defer { statement.reset() }
            var scopes: [ScopeInfo] = []
            while try statement.step() { scopes.append(Self.scopeInfo(statement)) }
            return scopes
        }
    }

    public func changes(scope name: String, after: Int64, limit: Int) throws(StoreError) -> ChangePage {
        guard limit >= 0 else { throw .invalidArgument("limit must be ≥ 0, got \(limit)") }
        return try read { connection throws(StoreError) in
            let lookup = try connection.statement(Self.scopeInfoSelect + " WHERE s.name = ?1 AND s.deleted = 0")
            try lookup.bind(name)
            guard try lookup.step() else {
                lookup.reset()
                throw .scopeMissing(name)
            }
            let info = Self.scopeInfo(lookup)
            let scopeID = lookup.int64(5)
            lookup.reset()
            guard after >= info.oldestResumableVersion else {
                throw .historyTruncated(scope: name, after: after, oldestResumable: info.oldestResumableVersion)
            }
            let records = try Self.changeRecords(connection, scopeID: scopeID, after: after, limit: limit)
            return ChangePage(records: records, currentVersion: info.version)
        }
    }

    public func idempotencyRecord(scope name: String, key: String) throws(StoreError) -> IdempotencyRecord? {
        let cutoff = configuration.clock() - configuration.idempotencyTTLMilliseconds
        return try read { connection throws(StoreError) in
            let statement = try connection.statement(
                """
                SELECT i.request_digest, i.status, i.response, i.version, i.created_at
                FROM idempotency i JOIN scopes s ON s.id = i.scope_id
                WHERE s.name = ?1 AND s.deleted = 0 AND i.key = ?2 AND i.created_at >= ?3
                """)
            try statement.bind(name, key, cutoff)
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return IdempotencyRecord(
                key: key, requestDigest: statement.blob(0), status: Int(statement.int64(1)),
                response: statement.blob(2), version: statement.optionalInt64(3),
                createdAtMilliseconds: statement.int64(4))
        }
    }

    static let scopeInfoSelect = """
        SELECT s.name, s.root_class, s.root_uuid, s.version,
               (SELECT min(version) FROM changes WHERE scope_id = s.id), s.id
        FROM scopes s
        """

    static func scopeInfo(_ statement: SQLiteStatement) -> ScopeInfo {
        ScopeInfo(
            descriptor: ScopeDescriptor(
                name: statement.text(0), rootClass: statement.text(1), rootUUID: statement.text(2)),
            version: statement.int64(3), lowestRetainedVersion: statement.optionalInt64(4))
    }

    static func changeRecords(
        _ connection: SQLiteConnection, scopeID: Int64, after: Int64, limit: Int
    ) throws(StoreError) -> [ChangeRecord] {
        let statement = try connection.statement(
            "SELECT version, payload FROM changes WHERE scope_id = ?1 AND version > ?2 ORDER BY version LIMIT ?3")
        try statement.bind(scopeID, after, limit)
        defer { statement.reset() }
        var records: [ChangeRecord] = []
        while try statement.step() {
            records.append(ChangeRecord(version: statement.int64(0), payload: statement.blob(1)))
        }
        return records
    }

    /// Runs `body` in a read transaction on one of the reader connections.
    func read<Value: Sendable>(_ body: (SQLiteConnection) throws(StoreError) -> Value) throws(StoreError) -> Value {
        try readers.read(body)
    }
}
