import Store

/// Every statement the store runs, prepared once per connection.
enum PostgresStatements {
    private static let int8 = PGValue.int8OID
    private static let int4 = PGValue.int4OID
    private static let text = PGValue.textOID
    private static let bytea = PGValue.byteaOID

    /// The channel every node listens on.
    static let channel = "jetstream_changes"

    // MARK: Writes (one function call each; see PostgresSchema)

    static let append = PGStatement(
        "js_append", "SELECT code, current FROM jetstream.append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        types: [text, int8, bytea, int8, int8, text, bytea, int4, bytea, int8, int8])
    static let recordRejection = PGStatement(
        "js_record_rejection", "SELECT code, current FROM jetstream.record_rejection($1, $2, $3, $4, $5, $6, $7)",
        types: [text, text, bytea, int4, bytea, int8, int8])
    static let createScope = PGStatement(
        "js_create_scope", "SELECT code, current FROM jetstream.create_scope($1, $2, $3, $4)",
        types: [text, text, text, bytea])
    static let deleteScope = PGStatement(
        "js_delete_scope", "SELECT code, current FROM jetstream.delete_scope($1)", types: [text])
    static let writeSnapshot = PGStatement(
        "js_write_snapshot", "SELECT code, current FROM jetstream.write_snapshot($1, $2, $3, $4)",
        types: [text, int8, bytea, int8])
    /// The store's own metadata (the schema records): an upsert, or a removal when the value is
    /// null, answered like the functions.
    static let writeMetadata = PGStatement(
        "js_write_metadata",
        """
        WITH removed AS (DELETE FROM jetstream.metadata WHERE key = $1 AND $2::bytea IS NULL),
        written AS (
            INSERT INTO jetstream.metadata (key, value) SELECT $1, $2 WHERE $2::bytea IS NOT NULL
            ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)
        SELECT 0::bigint AS code, 0::bigint AS current
        """, types: [text, bytea])
    /// Its own transaction after the data commit, without waiting for its own WAL flush (a hint).
    static let notify = PGStatement(
        "js_notify", "SELECT set_config('synchronous_commit', 'off', true), pg_notify('\(channel)', $1)", types: [text])
    /// Every scope's log up to its retention base, above its prune mark (schema version 4).
    static let retention = PGStatement(
        "js_retention",
        """
        WITH bounds AS (
            SELECT s.id, s.pruned, (SELECT max(version) FROM jetstream.snapshots
                          WHERE scope_id = s.id AND version <= s.version - $1) AS bound
            FROM jetstream.scopes s WHERE NOT s.deleted)
        DELETE FROM jetstream.changes c USING bounds b
        WHERE c.scope_id = b.id AND c.version > b.pruned AND c.version <= b.bound
        """, types: [int8])
    static let expireKeys = PGStatement(
        "js_expire_keys", "DELETE FROM jetstream.idempotency WHERE created_at < $1", types: [int8])

    static let writes = [
        append, recordRejection, createScope, deleteScope, writeSnapshot, writeMetadata, notify, retention, expireKeys,
    ]

    // MARK: Reads (each one statement: one snapshot of the database)

    private static let scopeColumns = """
        s.name, s.root_class, s.root_uuid, s.version,
        (SELECT min(version) FROM jetstream.changes WHERE scope_id = s.id)
        """

    static let scope = PGStatement(
        "js_scope", "SELECT \(scopeColumns) FROM jetstream.scopes s WHERE s.name = $1 AND NOT s.deleted",
        types: [text])
    static let listScopes = PGStatement(
        "js_list_scopes",
        "SELECT \(scopeColumns) FROM jetstream.scopes s WHERE NOT s.deleted AND s.name > $1 ORDER BY s.name LIMIT $2",
        types: [text, int8])
    /// The scope's info and its records after `$2` in one statement (one snapshot), one row per record
    /// (a single row with NULL record columns when there is none).
    static let changes = PGStatement(
        "js_changes",
        """
        SELECT \(scopeColumns), c.version, c.payload
        FROM jetstream.scopes s
        LEFT JOIN LATERAL (SELECT version, payload FROM jetstream.changes
                           WHERE scope_id = s.id AND version > $2 ORDER BY version LIMIT $3) c ON true
        WHERE s.name = $1 AND NOT s.deleted
        ORDER BY c.version
        """, types: [text, int8, int8])
    static let idempotencyRecord = PGStatement(
        "js_idempotency_record",
        """
        SELECT i.request_digest, i.status, i.response, i.version, i.created_at
        FROM jetstream.idempotency i JOIN jetstream.scopes s ON s.id = i.scope_id
        WHERE s.name = $1 AND NOT s.deleted AND i.key = $2 AND i.created_at >= $3
        """, types: [text, text, int8])
    /// `$1` is `name:version,…` (scope names hold neither `:` nor `,`): the records after each.
    static let changesOfMany = PGStatement(
        "js_changes_of_many",
        """
        WITH wanted AS (
            SELECT split_part(item, ':', 1) AS name, split_part(item, ':', 2)::bigint AS after
            FROM unnest(string_to_array($1, ',')) AS item)
        SELECT w.name, c.version, c.payload
        FROM wanted w
        JOIN jetstream.scopes s ON s.name = w.name AND NOT s.deleted
        JOIN LATERAL (SELECT version, payload FROM jetstream.changes
                      WHERE scope_id = s.id AND version > w.after ORDER BY version LIMIT $2) c ON true
        ORDER BY w.name, c.version
        """, types: [text, int8])
    static let scopeVersions = PGStatement(
        "js_scope_versions", "SELECT name, version, deleted FROM jetstream.scopes", types: [])
    static let liveNames = PGStatement(
        "js_live_names", "SELECT name FROM jetstream.scopes WHERE NOT deleted ORDER BY name", types: [])
    /// The newest snapshot at or before `$2`, and the oldest one kept.
    static let snapshotAtOrBefore = PGStatement(
        "js_snapshot_at_or_before",
        """
        SELECT sn.version, sn.payload, (SELECT min(version) FROM jetstream.snapshots WHERE scope_id = s.id)
        FROM jetstream.scopes s LEFT JOIN LATERAL (
            SELECT version, payload FROM jetstream.snapshots
            WHERE scope_id = s.id AND version <= $2 ORDER BY version DESC LIMIT 1) sn ON true
        WHERE s.name = $1 AND NOT s.deleted
        """, types: [text, int8])
    static let latestSnapshot = PGStatement(
        "js_latest_snapshot",
        """
        SELECT sn.version, sn.payload FROM jetstream.snapshots sn JOIN jetstream.scopes s ON s.id = sn.scope_id
        WHERE s.name = $1 AND NOT s.deleted ORDER BY sn.version DESC LIMIT 1
        """, types: [text])
}
