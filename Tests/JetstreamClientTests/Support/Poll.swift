/// Bounded waits: polls a condition every 10 ms until it holds or the time is up.
enum Poll {
    /// Returns once `condition` holds; throws a ``HarnessError`` naming `what` (evaluated then, so
    /// it can describe the state at the timeout) after `limit`.
    ///
    /// ```swift
    /// try await Poll.until("bob sees the shape (bob: \(bob.snapshot))") { bob.canvas.shapes.count == 1 }
    /// ```
    @MainActor
    static func until(
        _ what: @autoclosure () -> String, within limit: Duration = .seconds(20),
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                throw HarnessError("waited \(limit) in vain until \(what())")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
