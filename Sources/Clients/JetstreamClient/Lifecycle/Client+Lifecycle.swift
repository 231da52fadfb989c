extension Client {
    /// Pauses the client for an app going to the background: closes the shared event stream of
    /// every scope it syncs and makes no other connection, no reconnection and no presence refresh
    /// until ``resume()``. Returns once the stream is closed; the events it brought until then are
    /// applied.
    ///
    /// Local changes made meanwhile show in their scopes at once, as always, and are queued: none
    /// is sent while suspended (a change set already on its way gets its answer, or is sent again
    /// with its key at resume). Every sync's ``ScopeSync/status`` is `.suspended`, and its
    /// ``Presence/others`` is empty (the server's presence of this client expires after its ttl).
    /// ``Presence/set(_:isolation:)`` waits for the resume (its `PUT` is held back too), and so
    /// does ``ScopeSync/undo(isolation:)`` while local sets made before it are held. A scope
    /// fetched while suspended is loaded and joins the stream at resume. Calling it again while
    /// suspended does nothing; so does calling it on a copy of this client (copies share one
    /// stream).
    ///
    /// ```swift
    /// .onChange(of: scenePhase) { _, phase in
    ///     switch phase {
    ///     case .background: Task { await client.suspend() }
    ///     case .active: Task { await client.resume() }
    ///     default: break
    ///     }
    /// }
    /// ```
    public func suspend() async {
        await stream.suspend()
    }

    /// Ends ``suspend()``: re-opens the shared stream at once — no backoff, whatever the attempts
    /// before — from the last event id (every scope resumes where it was: no change set missed or
    /// applied twice), asking the token provider again, and sends the queued changes and the
    /// presence (when a refresh is due). The syncs show `.reconnecting(attempt: 0)` (`.connecting`
    /// for a scope never connected) until the stream opens. Does nothing when not suspended.
    public func resume() async {
        await stream.resume()
    }

    /// Whether ``suspend()`` was called and ``resume()`` not since.
    public var isSuspended: Bool { stream.isSuspended }

    /// Tells the client that the device's network came back: a stream waiting out its backoff
    /// reconnects at once (the backoff starts over), and a change set waiting to be sent again goes
    /// at once. Nothing happens while the stream is up or the client suspended.
    ///
    /// On Apple platforms the client calls it itself: an `NWPathMonitor` watches the network from
    /// the first connection on, and a path that becomes satisfied after being unsatisfied calls it.
    /// Elsewhere (Linux has no `Network` framework) the app may call it from its own signal.
    public func networkBecameAvailable() async {
        await stream.networkBecameAvailable()
    }
}
