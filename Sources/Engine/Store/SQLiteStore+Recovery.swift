/// Recovery after a restart: SQLite has already replayed its WAL when the store opened; what remains is
/// to hand the gateway each live scope's latest snapshot and the log after it, checking the log is whole.
extension SQLiteStore {
    public func recover(_ body: (RecoveredScope) throws -> Void) throws {
        var after = ""
        while true {
            // A few scopes per read transaction: the reader does not pin the WAL for long, and at most a few
            // scopes' tails are in memory at once.
            let page = try read { connection throws(StoreError) -> [RecoveredScope] in
                let statement = try connection.statement(
                    Self.scopeInfoSelect + " WHERE s.deleted = 0 AND s.name > ?1 ORDER BY s.name LIMIT 4")
                try statement.bind(after)
                var scopes: [(ScopeInfo, Int64)] = []
                while try statement.step() { scopes.append((Self.scopeInfo(statement), statement.int64(5))) }
                statement.reset()
                var recovered: [RecoveredScope] = []
                for (info, scopeID) in scopes {
                    recovered.append(try recoverScope(connection, info: info, scopeID: scopeID))
                }
                return recovered
            }
            for scope in page { try body(scope) }
            guard let last = page.last else { return }
            after = last.info.name
        }
    }

    public func recoverScope(named name: String) throws(StoreError) -> RecoveredScope? {
        try read { connection throws(StoreError) -> RecoveredScope? in
            guard let (info, scopeID) = try Self.liveScope(connection, named: name) else { return nil }
            return try recoverScope(connection, info: info, scopeID: scopeID)
        }
    }

    /// The live scope `name` and its row id, nil when there is none.
    static func liveScope(_ connection: SQLiteConnection, named name: String) throws(StoreError) -> (ScopeInfo, Int64)?
    {
        let statement = try connection.statement(scopeInfoSelect + " WHERE s.name = ?1 AND s.deleted = 0")
        try statement.bind(name)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (scopeInfo(statement), statement.int64(5))
    }

    private func recoverScope(
        _ connection: SQLiteConnection, info: ScopeInfo, scopeID: Int64
    ) throws(StoreError)
        -> RecoveredScope
    {
        let snapshotStatement = try connection.statement(
            "SELECT version, payload FROM snapshots WHERE scope_id = ?1 ORDER BY version DESC LIMIT 1")
        try snapshotStatement.bind(scopeID)
        guard try snapshotStatement.step() else {
            snapshotStatement.reset()
            throw .corrupt(path: path, message: "scope '\(info.name)' has no snapshot")
        }
        let snapshotVersion = snapshotStatement.int64(0)
        let snapshot = snapshotStatement.blob(1)
        snapshotStatement.reset()
        let tail = try Self.changeRecords(connection, scopeID: scopeID, after: snapshotVersion, limit: Int(Int32.max))
        return try RecoveredScope(
            checking: info, snapshotVersion: snapshotVersion, snapshot: snapshot, tail: tail, store: path)
    }

    public func scope(named name: String, at version: Int64) throws(StoreError) -> RecoveredScope? {
        try read { connection throws(StoreError) -> RecoveredScope? in
            guard let (info, scopeID) = try Self.liveScope(connection, named: name) else { return nil }
            let through = min(version, info.version)
            let snapshotStatement = try connection.statement(
                """
                SELECT version, payload FROM snapshots WHERE scope_id = ?1 AND version <= ?2
                ORDER BY version DESC LIMIT 1
                """)
            try snapshotStatement.bind(scopeID, through)
            let found = try snapshotStatement.step()
            let snapshotVersion = found ? snapshotStatement.int64(0) : nil
            let snapshot = found ? snapshotStatement.blob(1) : []
            snapshotStatement.reset()
            let oldestReadable = try max(
                info.oldestResumableVersion, oldestSnapshotVersion(connection, scopeID: scopeID))
            guard let snapshotVersion, through >= oldestReadable else {
                throw .historyTruncated(scope: name, after: version, oldestResumable: oldestReadable)
            }
            let tail = try Self.changeRecords(
                connection, scopeID: scopeID, after: snapshotVersion, limit: Int(through - snapshotVersion))
            return try RecoveredScope(
                checking: info, snapshotVersion: snapshotVersion, snapshot: snapshot, tail: tail, store: path,
                through: through)
        }
    }

    private func oldestSnapshotVersion(_ connection: SQLiteConnection, scopeID: Int64) throws(StoreError) -> Int64 {
        let statement = try connection.statement("SELECT min(version) FROM snapshots WHERE scope_id = ?1")
        try statement.bind(scopeID)
        defer { statement.reset() }
        return try statement.step() ? statement.optionalInt64(0) ?? Int64.max : Int64.max
    }
}
