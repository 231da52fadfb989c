extension ScopeReplica {
    /// Whether the client is suspended (``Client/suspend()``): the sender and the presence
    /// announcer hold back, and the status is `.suspended`.
    var isSuspended: Bool { client.stream.isSuspended }

    /// Shows the shared stream's status for this scope, or `.suspended` while the client is.
    func showStatus() {
        guard !isStopped else { return }
        setStatus(isSuspended ? .suspended : streamState)
    }

    /// The client was suspended or resumed; the suspension is read when this lands, so calls that
    /// cross on their way still leave the replica as the client is.
    func suspensionChanged(isolation: isolated any Actor) {
        guard !isStopped else { return }
        showStatus()
        if isSuspended {
            // An app in the background may be ended without another word: its copy is written now.
            rewriteStoredCopy()
            // No presence event comes while suspended: who is here is no longer known. The stream
            // at resume starts the list over with the server's joins.
            if !roster.members.isEmpty {
                roster.clear()
                notifyPresence()
            }
        } else {
            sendBackoff?.cancel()
            wakeSender.yield()
            wakePresence.yield()
        }
    }

    /// The device's network came back: a send waiting out its backoff goes at once.
    func networkBecameAvailable(isolation: isolated any Actor) {
        sendBackoff?.cancel()
    }

    /// The sender's backoff (R6), cut short by a resume or the network coming back, and ended by
    /// the sender's cancellation (a stopped sync). The sender decides it and begins it with no
    /// suspension in between, so no cut falls between the two.
    func waitOutSendBackoff(_ delay: Duration, isolation: isolated any Actor = #isolation) async {
        let wait = Task<Void, Never> { try? await Task.sleep(for: delay) }
        sendBackoff = wait
        await withTaskCancellationHandler {
            await wait.value
        } onCancel: {
            wait.cancel()
        }
        sendBackoff = nil
    }
}
