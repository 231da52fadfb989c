/// What a restart needs to rebuild one scope: its latest snapshot and the change sets logged after it.
///
/// ```swift
/// try await store.recover { scope in
///     var state = try ScopeState(decoding: scope.snapshot)
///     for record in scope.tail { try state.apply(decoding: record.payload) }
/// }
/// ```
public struct RecoveredScope: Sendable, Hashable {
    public var info: ScopeInfo
    /// The version the snapshot is at; replaying ``tail`` brings it to `info.version`.
    public var snapshotVersion: Int64
    public var snapshot: [UInt8]
    /// The change sets after ``snapshotVersion``, contiguous, oldest first.
    public var tail: [ChangeRecord]

    public init(info: ScopeInfo, snapshotVersion: Int64, snapshot: [UInt8], tail: [ChangeRecord]) {
        self.info = info
        self.snapshotVersion = snapshotVersion
        self.snapshot = snapshot
        self.tail = tail
    }
}
