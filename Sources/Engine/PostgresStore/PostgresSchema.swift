import Store

/// The gateway's tables and functions in the `jetstream` schema, created and migrated by the gateway
/// itself. ``migrate(_:)`` holds a transaction-level advisory lock, so nodes starting together
/// migrate one after the other and the later ones find the work done.
///
/// Every write is one function call that never fails for an expected reason (a version conflict, a
/// missing scope, a stored key): it locks the scope's row first, checks, and only then writes,
/// returning a code. So a batch of appends can travel as one pipeline (`BEGIN`; one call per
/// append; `COMMIT`) without savepoints, and one refused append never aborts the others.
enum PostgresSchema {
    /// The version this build writes; a database at a newer one is refused.
    static let version = 4

    /// Codes the write functions return (`code`, `current`).
    enum Code: Int64 {
        case ok = 0
        case missing = 1
        case conflict = 2
        case staleBase = 3
        case keyExists = 4
        case exists = 5
        case snapshotAhead = 6
        case snapshotOlder = 7
    }

    static let lockKey: Int64 = 0x6A65_7473_7472_6D31  // "jetstrm1"

    static let versionOne = #"""
        CREATE TABLE jetstream.scopes (
            id bigserial PRIMARY KEY,
            name text COLLATE "C" NOT NULL UNIQUE,
            root_class text NOT NULL,
            root_uuid text NOT NULL,
            version bigint NOT NULL,
            -- the lineage token of the last version logged (0: none), see AppendRequest.parentToken
            head bigint NOT NULL DEFAULT 0,
            deleted boolean NOT NULL DEFAULT false
        );
        CREATE TABLE jetstream.changes (
            scope_id bigint NOT NULL REFERENCES jetstream.scopes(id),
            version bigint NOT NULL,
            payload bytea NOT NULL,
            PRIMARY KEY (scope_id, version)
        );
        CREATE TABLE jetstream.snapshots (
            scope_id bigint NOT NULL REFERENCES jetstream.scopes(id),
            version bigint NOT NULL,
            payload bytea NOT NULL,
            PRIMARY KEY (scope_id, version)
        );
        CREATE TABLE jetstream.idempotency (
            scope_id bigint NOT NULL REFERENCES jetstream.scopes(id),
            key text COLLATE "C" NOT NULL,
            request_digest bytea NOT NULL,
            status integer NOT NULL,
            response bytea NOT NULL,
            version bigint,
            created_at bigint NOT NULL,
            PRIMARY KEY (scope_id, key)
        );
        CREATE INDEX idempotency_created_at ON jetstream.idempotency (created_at);

        -- One change set and its idempotency record, or a code saying why not (nothing written).
        CREATE FUNCTION jetstream.append(
            p_name text, p_version bigint, p_payload bytea, p_parent bigint, p_token bigint,
            p_key text, p_digest bytea, p_status integer, p_response bytea, p_now bigint, p_fresh_after bigint,
            OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record;
        BEGIN
            SELECT id, version, head INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            current := s.version;
            IF p_version <> s.version + 1 THEN code := 2; RETURN; END IF;
            IF p_parent <> 0 AND p_parent <> s.head THEN code := 3; RETURN; END IF;
            IF p_key IS NOT NULL THEN
                PERFORM 1 FROM jetstream.idempotency
                    WHERE scope_id = s.id AND key = p_key AND created_at >= p_fresh_after;
                IF FOUND THEN code := 4; RETURN; END IF;
                INSERT INTO jetstream.idempotency AS i (scope_id, key, request_digest, status, response, version, created_at)
                    VALUES (s.id, p_key, p_digest, p_status, p_response, p_version, p_now)
                    ON CONFLICT (scope_id, key) DO UPDATE SET request_digest = EXCLUDED.request_digest,
                        status = EXCLUDED.status, response = EXCLUDED.response, version = EXCLUDED.version,
                        created_at = EXCLUDED.created_at;
            END IF;
            INSERT INTO jetstream.changes (scope_id, version, payload) VALUES (s.id, p_version, p_payload);
            -- The conditional update is the winner's test; the row lock above made it certain.
            UPDATE jetstream.scopes SET version = p_version, head = p_token WHERE id = s.id AND version = p_version - 1;
            code := 0; current := p_version;
        END $$;

        -- A rejected outcome under its key (no version is consumed).
        CREATE FUNCTION jetstream.record_rejection(
            p_name text, p_key text, p_digest bytea, p_status integer, p_response bytea, p_now bigint,
            p_fresh_after bigint, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record;
        BEGIN
            SELECT id, version INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            current := s.version;
            PERFORM 1 FROM jetstream.idempotency WHERE scope_id = s.id AND key = p_key AND created_at >= p_fresh_after;
            IF FOUND THEN code := 4; RETURN; END IF;
            INSERT INTO jetstream.idempotency (scope_id, key, request_digest, status, response, version, created_at)
                VALUES (s.id, p_key, p_digest, p_status, p_response, NULL, p_now)
                ON CONFLICT (scope_id, key) DO UPDATE SET request_digest = EXCLUDED.request_digest,
                    status = EXCLUDED.status, response = EXCLUDED.response, version = NULL,
                    created_at = EXCLUDED.created_at;
            code := 0;
        END $$;

        -- A new scope at 0, or a deleted name again after its tombstone.
        CREATE FUNCTION jetstream.create_scope(
            p_name text, p_root_class text, p_root_uuid text, p_snapshot bytea, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record;
        BEGIN
            SELECT id, version, deleted INTO s FROM jetstream.scopes WHERE name = p_name FOR UPDATE;
            IF FOUND AND NOT s.deleted THEN code := 5; current := s.version; RETURN; END IF;
            IF FOUND THEN
                current := s.version + 1;
                UPDATE jetstream.scopes SET root_class = p_root_class, root_uuid = p_root_uuid, version = current,
                    head = 0, deleted = false WHERE id = s.id;
                INSERT INTO jetstream.snapshots (scope_id, version, payload) VALUES (s.id, current, p_snapshot);
            ELSE
                INSERT INTO jetstream.scopes (name, root_class, root_uuid, version)
                    VALUES (p_name, p_root_class, p_root_uuid, 0)
                    ON CONFLICT (name) DO NOTHING RETURNING id INTO s;
                -- Another node created the name between our look-up and insert.
                IF s.id IS NULL THEN code := 5; current := 0; RETURN; END IF;
                current := 0;
                INSERT INTO jetstream.snapshots (scope_id, version, payload) VALUES (s.id, 0, p_snapshot);
            END IF;
            code := 0;
        END $$;

        -- Drops a scope's log, snapshots and keys; the row stays as its tombstone.
        CREATE FUNCTION jetstream.delete_scope(p_name text, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record;
        BEGIN
            SELECT id, version INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            DELETE FROM jetstream.changes WHERE scope_id = s.id;
            DELETE FROM jetstream.snapshots WHERE scope_id = s.id;
            DELETE FROM jetstream.idempotency WHERE scope_id = s.id;
            UPDATE jetstream.scopes SET deleted = true, head = 0 WHERE id = s.id;
            code := 0; current := s.version;
        END $$;

        -- The state at a version; older snapshots go, and the log before min(version - N, snapshot).
        CREATE FUNCTION jetstream.write_snapshot(
            p_name text, p_version bigint, p_snapshot bytea, p_retained bigint, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record; latest bigint;
        BEGIN
            SELECT id, version INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            current := s.version;
            IF p_version > s.version THEN code := 6; RETURN; END IF;
            SELECT max(version) INTO latest FROM jetstream.snapshots WHERE scope_id = s.id;
            IF latest IS NOT NULL AND p_version < latest THEN code := 7; current := latest; RETURN; END IF;
            INSERT INTO jetstream.snapshots (scope_id, version, payload) VALUES (s.id, p_version, p_snapshot)
                ON CONFLICT (scope_id, version) DO UPDATE SET payload = EXCLUDED.payload;
            DELETE FROM jetstream.snapshots WHERE scope_id = s.id AND version < p_version;
            DELETE FROM jetstream.changes WHERE scope_id = s.id AND version <= LEAST(s.version - p_retained, p_version);
            code := 0;
        END $$;
        """#

    /// Version 3: what the store keeps about itself, by key (the record of the model schema the
    /// nodes serve, see `docs/schema-evolution.md`).
    static let versionThree = """
        CREATE TABLE IF NOT EXISTS jetstream.metadata (key text PRIMARY KEY, value bytea NOT NULL);
        """

    /// Version 2: snapshots stay back to the retention base (the newest snapshot at least N
    /// versions old), and the log is pruned up to that base, so every version still readable has a
    /// snapshot at or before it (reads of the past). Version 1 kept only the latest snapshot.
    static let versionTwo = #"""
        CREATE OR REPLACE FUNCTION jetstream.write_snapshot(
            p_name text, p_version bigint, p_snapshot bytea, p_retained bigint, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record; latest bigint; base bigint;
        BEGIN
            SELECT id, version INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            current := s.version;
            IF p_version > s.version THEN code := 6; RETURN; END IF;
            SELECT max(version) INTO latest FROM jetstream.snapshots WHERE scope_id = s.id;
            IF latest IS NOT NULL AND p_version < latest THEN code := 7; current := latest; RETURN; END IF;
            INSERT INTO jetstream.snapshots (scope_id, version, payload) VALUES (s.id, p_version, p_snapshot)
                ON CONFLICT (scope_id, version) DO UPDATE SET payload = EXCLUDED.payload;
            SELECT max(version) INTO base FROM jetstream.snapshots
                WHERE scope_id = s.id AND version <= s.version - p_retained;
            IF base IS NOT NULL THEN
                DELETE FROM jetstream.snapshots WHERE scope_id = s.id AND version < base;
                DELETE FROM jetstream.changes WHERE scope_id = s.id AND version <= base;
            END IF;
            code := 0;
        END $$;
        """#

    /// Version 4: each scope remembers how far its log was pruned (`pruned`: every change at or
    /// below it is gone), and `write_snapshot` deletes only above it. PostgreSQL leaves a deleted
    /// row's index entry until a vacuum, so a delete of "everything up to the base" walked every
    /// entry pruned since the last vacuum: on a scope taking 19k change sets/s, a snapshot's prune
    /// grew from 4 ms to 50 ms within 40 s and held up the writes queued behind it. A row from
    /// before this version starts at 0, so its first prune still deletes the whole range.
    static let versionFour = #"""
        ALTER TABLE jetstream.scopes ADD COLUMN IF NOT EXISTS pruned bigint NOT NULL DEFAULT 0;

        CREATE OR REPLACE FUNCTION jetstream.write_snapshot(
            p_name text, p_version bigint, p_snapshot bytea, p_retained bigint, OUT code bigint, OUT current bigint)
        LANGUAGE plpgsql AS $$
        DECLARE s record; latest bigint; base bigint;
        BEGIN
            SELECT id, version, pruned INTO s FROM jetstream.scopes WHERE name = p_name AND NOT deleted FOR UPDATE;
            IF NOT FOUND THEN code := 1; current := 0; RETURN; END IF;
            current := s.version;
            IF p_version > s.version THEN code := 6; RETURN; END IF;
            SELECT max(version) INTO latest FROM jetstream.snapshots WHERE scope_id = s.id;
            IF latest IS NOT NULL AND p_version < latest THEN code := 7; current := latest; RETURN; END IF;
            INSERT INTO jetstream.snapshots (scope_id, version, payload) VALUES (s.id, p_version, p_snapshot)
                ON CONFLICT (scope_id, version) DO UPDATE SET payload = EXCLUDED.payload;
            SELECT max(version) INTO base FROM jetstream.snapshots
                WHERE scope_id = s.id AND version <= s.version - p_retained;
            IF base IS NOT NULL THEN
                DELETE FROM jetstream.snapshots WHERE scope_id = s.id AND version < base;
                IF base > s.pruned THEN
                    DELETE FROM jetstream.changes WHERE scope_id = s.id AND version > s.pruned AND version <= base;
                    UPDATE jetstream.scopes SET pruned = base WHERE id = s.id;
                END IF;
            END IF;
            code := 0;
        END $$;
        """#

    /// Checks that the database holds a store this build can read, creating and changing nothing.
    static func requireExisting(_ connection: PGConnection) throws(StoreError) {
        let found = try connection.query(
            "SELECT to_regclass('jetstream.schema_version') IS NOT NULL", operation: "look for the store")
        guard found.string(row: 0, column: 0) == "t" || found.bytes(row: 0, column: 0) == [1] else {
            throw .openFailed(
                path: "database", message: "it holds no Jetstream store (no jetstream schema): nothing to check")
        }
        let versions = try connection.query("SELECT max(version) FROM jetstream.schema_version")
        let current = versions.optionalInt64(row: 0, column: 0) ?? 0
        guard current >= 1 && current <= Int64(version) else {
            throw .corrupt(
                path: "jetstream schema",
                message: "the database is at schema version \(current); this build reads 1 to \(version)")
        }
    }

    /// Creates the schema or brings it to ``version``; refuses a database a newer build migrated.
    static func migrate(_ connection: PGConnection) throws(StoreError) {
        try connection.execute(
            """
            BEGIN;
            SELECT pg_advisory_xact_lock(\(lockKey));
            CREATE SCHEMA IF NOT EXISTS jetstream;
            CREATE TABLE IF NOT EXISTS jetstream.schema_version (version integer NOT NULL);
            """, operation: "lock the schema for migration")
        do throws(StoreError) {
            let found = try connection.query("SELECT max(version) FROM jetstream.schema_version")
            let current = found.optionalInt64(row: 0, column: 0) ?? 0
            if current > Int64(version) {
                throw .corrupt(
                    path: "jetstream schema",
                    message:
                        "the database is at schema version \(current); this gateway knows up to \(version): upgrade the gateway"
                )
            }
            if current < 1 {
                try connection.execute(versionOne, operation: "create schema version 1")
                try connection.query("INSERT INTO jetstream.schema_version (version) VALUES (1)")
            }
            if current < 2 {
                try connection.execute(versionTwo, operation: "migrate to schema version 2")
                try connection.query("INSERT INTO jetstream.schema_version (version) VALUES (2)")
            }
            if current < 3 {
                try connection.execute(versionThree, operation: "migrate to schema version 3")
                try connection.query("INSERT INTO jetstream.schema_version (version) VALUES (3)")
            }
            if current < 4 {
                try connection.execute(versionFour, operation: "migrate to schema version 4")
                try connection.query("INSERT INTO jetstream.schema_version (version) VALUES (4)")
            }
            try connection.execute("COMMIT", operation: "commit the migration")
        } catch {
            try? connection.execute("ROLLBACK", operation: "roll back the migration")
            throw error
        }
    }
}
