import PostgresStore
import Store

/// The tunables a contract test sets, for whichever kind of store it opens: the shared ones set both
/// configurations at once; a test reaches into ``sqlite`` or ``postgres`` for a setting only one
/// kind has (SQLite's `retentionChunk`, say).
///
/// ```swift
/// var settings = StoreSettings()
/// settings.retainedChangeSets = 5
/// try await withStore(kind, settings: settings) { store in … }
/// ```
struct StoreSettings: Sendable {
    var sqlite = SQLiteStore.Configuration()
    var postgres: PostgresStore.Configuration = {
        var configuration = PostgresStore.Configuration()
        // Fewer connections than a gateway node keeps (4 + 4 + a listener): many tests share one
        // server at once. Two writers still spread scopes over more than one connection.
        configuration.writerConnections = 2
        configuration.readerConnections = 2
        // A 2-core machine running every suite in parallel can be slow to answer.
        configuration.statementTimeout = .seconds(60)
        configuration.applicationName = "store-tests"
        return configuration
    }()

    /// Change sets kept per scope (at least; those after the latest snapshot are kept too).
    var retainedChangeSets: Int {
        get { sqlite.retainedChangeSets }
        set {
            sqlite.retainedChangeSets = newValue
            postgres.retainedChangeSets = newValue
        }
    }

    /// How long an idempotency record is kept and replayed.
    var idempotencyTTLMilliseconds: Int64 {
        get { sqlite.idempotencyTTLMilliseconds }
        set {
            sqlite.idempotencyTTLMilliseconds = newValue
            postgres.idempotencyTTLMilliseconds = newValue
        }
    }

    /// Read connections.
    var readerConnections: Int {
        get { sqlite.readerConnections }
        set {
            sqlite.readerConnections = newValue
            postgres.readerConnections = newValue
        }
    }

    /// The store's clock (milliseconds since 1970), for tests of expiry.
    var clock: @Sendable () -> Int64 {
        get { sqlite.clock }
        set {
            sqlite.clock = newValue
            postgres.clock = newValue
        }
    }
}
