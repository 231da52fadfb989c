/// A page of history: the change sets after a version, oldest first, and the scope's current version.
///
/// ```swift
/// let page = try await store.changes(scope: "canvas-1", after: 41, limit: 100)
/// let more = page.records.last.map { $0.version < page.currentVersion } ?? false
/// ```
public struct ChangePage: Sendable, Hashable {
    public var records: [ChangeRecord]
    /// The scope's version when the page was read (the same read transaction).
    public var currentVersion: Int64

    public init(records: [ChangeRecord], currentVersion: Int64) {
        self.records = records
        self.currentVersion = currentVersion
    }
}
