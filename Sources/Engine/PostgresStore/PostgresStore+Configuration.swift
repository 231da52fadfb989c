import Foundation
import Store
import Synchronization

extension PostgresStore {
    /// Tunables of the PostgreSQL store. The defaults suit the gateway (`--history-limit` sets
    /// ``retainedChangeSets``, `--database-writers` ``writerConnections``).
    ///
    /// ```swift
    /// var configuration = PostgresStore.Configuration()
    /// configuration.writerConnections = 2
    /// let store = try PostgresStore(url: "postgres://jetstream@127.0.0.1/jetstream", configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// Opens an existing store to read it only (`jetstream check-schema`): the schema is
        /// neither created nor migrated (a database without one is ``StoreError/openFailed(path:message:)``)
        /// and no maintenance runs. Writes still go through if asked for: the caller does not ask.
        public var readsOnly = false
        /// Change sets kept per scope for history and resume (at least; those after the latest
        /// snapshot are kept too).
        public var retainedChangeSets: Int = 10_000
        /// How long an idempotency record is kept and replayed, in milliseconds (default 7 days).
        public var idempotencyTTLMilliseconds: Int64 = 7 * 86_400_000
        /// How often one node expires idempotency records, in milliseconds.
        public var idempotencyExpiryIntervalMilliseconds: Int64 = 60_000
        /// Writer connections per node, each committing its own batches; a scope always uses the
        /// same one (by a hash of its name), which keeps its submission order.
        public var writerConnections: Int = 1
        /// Read connections (history, resume, lookups).
        public var readerConnections: Int = 4
        /// Most operations committed in one transaction.
        public var maximumBatchSize: Int = 512
        /// Most batches a writer connection has sent and not yet seen answered. With more than one,
        /// writes that arrive while a batch is on its way are sent at once instead of waiting out
        /// its round trip (on a link with a long round trip, each write would otherwise wait for
        /// the batch ahead of it, then for its own: two round trips).
        public var maximumBatchesInFlight: Int = 4
        /// How long after the last batch sent a writer may send the next one while batches are in
        /// flight. On a fast link the answer comes first and the writes gather into one batch (one
        /// commit, one WAL flush), as without pipelining.
        public var sendAheadAfter: Duration = .milliseconds(2)
        /// How often the listener asks for every scope's version, as a safety net for a lost
        /// notification (notifications themselves arrive within milliseconds).
        public var pollInterval: Duration = .seconds(2)
        /// The longest one round trip (or connecting) may take before the database counts as
        /// unreachable.
        public var statementTimeout: Duration = .seconds(10)
        /// How long a write may wait for the database — queued, connecting, or in its round trip —
        /// before it fails as unavailable (the gateway answers 503), and how long the listener may
        /// go without an answer before the store reports itself unavailable (`/readyz` 503, new
        /// writes refused at once). A silent link (no error, no FIN) is noticed only this way.
        /// More than ``pollInterval``: the listener's periodic round trip proves the link alive.
        public var unavailableAfter: Duration = .seconds(5)
        /// Name shown in `pg_stat_activity.application_name` (suffixed with the connection's role).
        public var applicationName: String = "jetstream"
        /// Milliseconds since 1970; replace it to test expiry with a manual clock.
        public var clock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

        public init() {}

        func validated() throws(StoreError) -> Configuration {
            guard retainedChangeSets >= 0 else { throw .invalidArgument("retainedChangeSets must be ≥ 0") }
            guard maximumBatchSize >= 1 else { throw .invalidArgument("maximumBatchSize must be ≥ 1") }
            guard (1...64).contains(maximumBatchesInFlight) else {
                throw .invalidArgument("maximumBatchesInFlight must be between 1 and 64, got \(maximumBatchesInFlight)")
            }
            guard sendAheadAfter >= .zero else { throw .invalidArgument("sendAheadAfter must be ≥ 0") }
            guard (1...64).contains(writerConnections) else {
                throw .invalidArgument("writerConnections must be between 1 and 64, got \(writerConnections)")
            }
            guard (1...64).contains(readerConnections) else {
                throw .invalidArgument("readerConnections must be between 1 and 64, got \(readerConnections)")
            }
            guard idempotencyTTLMilliseconds >= 0 else {
                throw .invalidArgument("idempotencyTTLMilliseconds must be ≥ 0")
            }
            guard pollInterval > .zero else { throw .invalidArgument("pollInterval must be > 0") }
            guard unavailableAfter > pollInterval else {
                throw .invalidArgument(
                    "unavailableAfter (\(unavailableAfter)) must be more than pollInterval (\(pollInterval))")
            }
            return self
        }

        /// The round-trip bound of the connections a request waits on (writers, readers, listener).
        var answerTimeout: Duration { min(statementTimeout, unavailableAfter) }
    }
}

/// The store's counters, shared by its connection threads.
final class PostgresCounters: Sendable {
    private let state = Mutex(SharedStoreStatistics())

    func withLock<Value>(_ body: (inout SharedStoreStatistics) -> Value) -> Value {
        state.withLock { body(&$0) }
    }
}
