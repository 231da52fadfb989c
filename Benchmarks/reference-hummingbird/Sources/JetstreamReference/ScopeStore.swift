import NIOCore

/// What the routes and the keep-alive timer need of a scope. Two kinds conform: the `Scope` actor
/// (the default mode, full validation) and `LightScope` (`--light`: light checks, one mutex, no
/// actor hop), so one `ScopeController` serves both modes.
protocol ScopeStore: AnyObject, Sendable {
    /// The current version and the state's JSON (cached per version).
    func currentState() async -> (version: Int, json: ByteBuffer)

    /// Checks a change set and applies it as a whole, or rejects it with one reply per fragment and
    /// changes nothing. An accepted set is recorded for resumption and sent to every subscriber.
    func apply(_ entries: [Result<FragmentRequest, FragmentError>]) async -> ChangeSetOutcome

    /// Registers an SSE subscriber with its catch-up (snapshot, reset or missed change sets).
    ///
    /// - Parameter lastEventID: the resume point; nil sends a snapshot.
    func subscribe(lastEventID: String?) async -> Subscription

    /// Sends the keep-alive comment to every subscriber.
    func keepAlive() async
}
