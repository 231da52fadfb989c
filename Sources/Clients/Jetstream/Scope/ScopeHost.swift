/// An actor that owns a ``Scope`` and delivers its queued observations and change sets on itself,
/// one actor job after the changes (the role the run loop played for the original).
///
/// ```swift
/// let host = ScopeHost(scope: Scope(root: Canvas()))
/// await host.withScope { scope in
///     (scope.root as! Canvas).name = "Sketch"
/// }  // queued observers and onChanges run in a following job on the host
/// await host.waitUntilDelivered()
/// ```
/// The scope is handed over with `sending`: afterwards only code running on the host can touch it
/// (Swift 6 region isolation enforces that at compile time).
public actor ScopeHost {
    private let scope: Scope
    private let flushRequest: FlushRequest
    private var scheduledDelivery: Task<Void, Never>?

    /// Takes ownership of `scope` (it must not be used elsewhere afterwards).
    public init(scope: sending Scope) {
        let flushRequest = FlushRequest()
        scope.onFlushNeeded = { flushRequest.isPending = true }
        self.scope = scope
        self.flushRequest = flushRequest
    }

    /// Runs `body` on the host with the scope. What it changes is delivered in a later job: queued
    /// observers run and ``Scope/onChanges(_:)`` handlers receive one change set.
    @discardableResult
    public func withScope<Result: Sendable>(_ body: @Sendable (Scope) throws -> Result) rethrows -> Result {
        defer { scheduleDeliveryIfNeeded() }
        return try body(scope)
    }

    /// Waits until everything changed so far has been delivered.
    public func waitUntilDelivered() async {
        while let scheduledDelivery {
            await scheduledDelivery.value
        }
    }

    private func scheduleDeliveryIfNeeded() {
        guard flushRequest.isPending, scheduledDelivery == nil else { return }
        scheduledDelivery = Task { self.deliver() }
    }

    private func deliver() {
        scheduledDelivery = nil
        flushRequest.isPending = false
        scope.flush()
        scheduleDeliveryIfNeeded()
    }
}

/// Set by the scope's ``Scope/onFlushNeeded`` callback; read by the host after each job.
private final class FlushRequest {
    var isPending = false
}
