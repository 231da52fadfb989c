import Store

extension PostgresStore {
    public func scope(named name: String) async throws(StoreError) -> ScopeInfo? {
        try await readers.read { connection throws(StoreError) in
            let result = try connection.query(PostgresStatements.scope, [.text(name)])
            return result.rowCount == 0 ? nil : Self.scopeInfo(result, row: 0)
        }
    }

    public func metadata(key: String) async throws(StoreError) -> [UInt8]? {
        try await readers.read { connection throws(StoreError) in
            let result = try connection.query("SELECT value FROM jetstream.metadata WHERE key = $1", [.text(key)])
            return result.rowCount == 0 ? nil : result.bytes(row: 0, column: 0)
        }
    }

    public func metadataEntries(prefix: String) async throws(StoreError) -> [(key: String, value: [UInt8])] {
        try await readers.read { connection throws(StoreError) in
            let result = try connection.query(
                "SELECT key, value FROM jetstream.metadata WHERE starts_with(key, $1) ORDER BY key", [.text(prefix)])
            return (0..<result.rowCount).map { (result.string(row: $0, column: 0), result.bytes(row: $0, column: 1)) }
        }
    }

    public func listScopes(after: String?, limit: Int) async throws(StoreError) -> [ScopeInfo] {
        guard limit >= 0 else { throw .invalidArgument("limit must be ≥ 0, got \(limit)") }
        return try await readers.read { connection throws(StoreError) in
            let result = try connection.query(
                PostgresStatements.listScopes, [.text(after ?? ""), .int64(Int64(limit))])
            return (0..<result.rowCount).map { Self.scopeInfo(result, row: $0) }
        }
    }

    public func changes(scope name: String, after: Int64, limit: Int) async throws(StoreError) -> ChangePage {
        guard limit >= 0 else { throw .invalidArgument("limit must be ≥ 0, got \(limit)") }
        return try await readers.read { connection throws(StoreError) in
            try Self.changes(connection, scope: name, after: after, limit: limit)
        }
    }

    public func idempotencyRecord(scope name: String, key: String) async throws(StoreError) -> IdempotencyRecord? {
        let cutoff = configuration.clock() - configuration.idempotencyTTLMilliseconds
        return try await readers.read { connection throws(StoreError) in
            let result = try connection.query(
                PostgresStatements.idempotencyRecord, [.text(name), .text(key), .int64(cutoff)])
            guard result.rowCount > 0 else { return nil }
            return IdempotencyRecord(
                key: key, requestDigest: result.bytes(row: 0, column: 0), status: Int(result.int64(row: 0, column: 1)),
                response: result.bytes(row: 0, column: 2), version: result.optionalInt64(row: 0, column: 3),
                createdAtMilliseconds: result.int64(row: 0, column: 4))
        }
    }

    public func recoverScope(named name: String) async throws(StoreError) -> RecoveredScope? {
        let description = target.description
        return try await readers.read { connection throws(StoreError) in
            try Self.recoverScope(connection, name: name, database: description)
        }
    }

    public func scope(named name: String, at version: Int64) async throws(StoreError) -> RecoveredScope? {
        let description = target.description
        return try await readers.read { connection throws(StoreError) in
            try connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do throws(StoreError) {
                let past = try Self.scopeInTransaction(connection, name: name, at: version, database: description)
                try connection.query("COMMIT")
                return past
            } catch {
                if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
                throw error
            }
        }
    }

    private static func scopeInTransaction(
        _ connection: PGConnection, name: String, at version: Int64, database: String
    ) throws(StoreError) -> RecoveredScope? {
        let scope = try connection.query(PostgresStatements.scope, [.text(name)])
        guard scope.rowCount > 0 else { return nil }
        let info = scopeInfo(scope, row: 0)
        let through = min(version, info.version)
        let snapshot = try connection.query(PostgresStatements.snapshotAtOrBefore, [.text(name), .int64(through)])
        guard snapshot.rowCount > 0 else { return nil }
        let oldestReadable = max(
            info.oldestResumableVersion, snapshot.optionalInt64(row: 0, column: 2) ?? Int64.max)
        guard let snapshotVersion = snapshot.optionalInt64(row: 0, column: 0), through >= oldestReadable else {
            throw .historyTruncated(scope: name, after: version, oldestResumable: oldestReadable)
        }
        let tail =
            through == snapshotVersion
            ? []
            : try changes(connection, scope: name, after: snapshotVersion, limit: Int(through - snapshotVersion))
                .records
        return try RecoveredScope(
            checking: info, snapshotVersion: snapshotVersion, snapshot: snapshot.bytes(row: 0, column: 1), tail: tail,
            store: database, through: through)
    }

    public func recover(_ body: (RecoveredScope) throws -> Void) async throws {
        let names = try await readers.read { connection throws(StoreError) in
            let result = try connection.query(PostgresStatements.liveNames, [])
            return (0..<result.rowCount).map { result.string(row: $0, column: 0) }
        }
        for name in names {
            // A scope deleted since the list was read is simply gone.
            if let scope = try await recoverScope(named: name) { try body(scope) }
        }
    }

    // MARK: Statements

    static func scopeInfo(_ result: PGResult, row: Int) -> ScopeInfo {
        ScopeInfo(
            descriptor: ScopeDescriptor(
                name: result.string(row: row, column: 0), rootClass: result.string(row: row, column: 1),
                rootUUID: result.string(row: row, column: 2)),
            version: result.int64(row: row, column: 3),
            lowestRetainedVersion: result.optionalInt64(row: row, column: 4))
    }

    /// One statement: the scope's version and retained range, and the records after `after`.
    static func changes(
        _ connection: PGConnection, scope name: String, after: Int64, limit: Int
    ) throws(StoreError)
        -> ChangePage
    {
        let result = try connection.query(
            PostgresStatements.changes, [.text(name), .int64(after), .int64(Int64(min(limit, Int(Int32.max))))])
        guard result.rowCount > 0 else { throw .scopeMissing(name) }
        let info = scopeInfo(result, row: 0)
        guard after >= info.oldestResumableVersion else {
            throw .historyTruncated(scope: name, after: after, oldestResumable: info.oldestResumableVersion)
        }
        var records: [ChangeRecord] = []
        for row in 0..<result.rowCount where !result.isNull(row: row, column: 5) {
            records.append(
                ChangeRecord(version: result.int64(row: row, column: 5), payload: result.bytes(row: row, column: 6)))
        }
        return ChangePage(records: records, currentVersion: info.version)
    }

    /// The scope's latest snapshot and the log after it, read in one repeatable-read transaction and
    /// checked contiguous.
    static func recoverScope(
        _ connection: PGConnection, name: String, database: String
    ) throws(StoreError)
        -> RecoveredScope?
    {
        try connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do throws(StoreError) {
            let recovered = try recoverScopeInTransaction(connection, name: name, database: database)
            try connection.query("COMMIT")
            return recovered
        } catch {
            if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
            throw error
        }
    }

    private static func recoverScopeInTransaction(
        _ connection: PGConnection, name: String, database: String
    )
        throws(StoreError) -> RecoveredScope?
    {
        let scope = try connection.query(PostgresStatements.scope, [.text(name)])
        guard scope.rowCount > 0 else { return nil }
        let info = scopeInfo(scope, row: 0)
        let snapshot = try connection.query(PostgresStatements.latestSnapshot, [.text(name)])
        guard snapshot.rowCount > 0 else {
            throw .corrupt(path: database, message: "scope '\(name)' has no snapshot")
        }
        let snapshotVersion = snapshot.int64(row: 0, column: 0)
        let tail = try changes(connection, scope: name, after: snapshotVersion, limit: Int(Int32.max)).records
        return try RecoveredScope(
            checking: info, snapshotVersion: snapshotVersion, snapshot: snapshot.bytes(row: 0, column: 1), tail: tail,
            store: database)
    }
}
