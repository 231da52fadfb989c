/// Server limits enforced while applying a change set (docs/model.md, step 5).
///
/// ```swift
/// var limits = Limits()
/// limits.maxObjectsPerScope = 500_000
/// ```
public struct Limits: Sendable, Hashable {
    /// Objects a scope may hold after a change set, the root included.
    public var maxObjectsPerScope: Int
    /// Fragments in one change set.
    public var maxFragmentsPerSet: Int
    /// UTF-8 bytes in one string value.
    public var maxStringLength: Int
    /// Elements in one collection value.
    public var maxCollectionLength: Int

    public init(
        maxObjectsPerScope: Int = 100_000, maxFragmentsPerSet: Int = 1000, maxStringLength: Int = 65_536,
        maxCollectionLength: Int = 100_000
    ) {
        self.maxObjectsPerScope = maxObjectsPerScope
        self.maxFragmentsPerSet = maxFragmentsPerSet
        self.maxStringLength = maxStringLength
        self.maxCollectionLength = maxCollectionLength
    }

    /// No limits at all (for importing a state that was already accepted).
    public static let unlimited = Limits(
        maxObjectsPerScope: .max, maxFragmentsPerSet: .max, maxStringLength: .max, maxCollectionLength: .max)
}
