import Foundation

extension SQLiteStore {
    /// Tunables of the SQLite store. The defaults suit the gateway (`--history-limit` sets
    /// ``retainedChangeSets``).
    ///
    /// ```swift
    /// var configuration = SQLiteStore.Configuration()
    /// configuration.retainedChangeSets = 500
    /// let store = try SQLiteStore(path: path, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// Change sets kept per scope for history and resume (at least; those after the latest snapshot
        /// are kept too, recovery needs them).
        public var retainedChangeSets: Int = 10_000
        /// How long an idempotency record is kept and replayed, in milliseconds (default 7 days).
        public var idempotencyTTLMilliseconds: Int64 = 7 * 86_400_000
        /// How often the commit thread expires idempotency records in the background, in milliseconds.
        public var idempotencyExpiryIntervalMilliseconds: Int64 = 60_000
        /// Read connections (history, resume, lookups run on them in parallel).
        public var readerConnections: Int = 4
        /// Most operations committed in one transaction.
        public var maximumBatchSize: Int = 1024
        /// Most records background retention and expiry delete per batch, so appends never wait long.
        public var retentionChunk: Int = 512
        /// WAL frames (pages of 4 KiB) after which the commit thread checkpoints, between batches: 64 MiB
        /// (SQLite truncates the WAL back to 72 MiB, so its blocks are kept). A checkpoint holds the
        /// next batch up, so a smaller bound shows in the write p99 (at 4096, 32 scopes under 32
        /// writers checkpointed about 10 times a second).
        public var checkpointFrames: Int = 16384
        /// Milliseconds since 1970; replace it to test expiry with a manual clock.
        public var clock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

        public init() {}

        /// A scope becomes due for background retention every this many appends.
        var retentionCheckInterval: Int64 { Int64(max(1, min(retainedChangeSets / 8, 256))) }

        func validated() throws(StoreError) -> Configuration {
            guard retainedChangeSets >= 0 else { throw .invalidArgument("retainedChangeSets must be ≥ 0") }
            guard maximumBatchSize >= 1 else { throw .invalidArgument("maximumBatchSize must be ≥ 1") }
            guard readerConnections >= 1 else { throw .invalidArgument("readerConnections must be ≥ 1") }
            guard retentionChunk >= 1 else { throw .invalidArgument("retentionChunk must be ≥ 1") }
            guard idempotencyTTLMilliseconds >= 0 else {
                throw .invalidArgument("idempotencyTTLMilliseconds must be ≥ 0")
            }
            return self
        }
    }
}
