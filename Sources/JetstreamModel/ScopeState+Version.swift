extension ScopeState {
    /// The same objects at another version number — for a store that assigns versions (a scope
    /// re-created after deletion continues numbering after its tombstone).
    ///
    /// ```swift
    /// let state = try ScopeState.create(rootClass: canvas, schema: schema).withVersion(43)
    /// ```
    public func withVersion(_ version: Int) -> ScopeState {
        var copy = self
        copy.version = version
        return copy
    }
}
