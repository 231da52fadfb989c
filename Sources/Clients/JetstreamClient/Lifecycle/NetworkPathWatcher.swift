#if canImport(Network)
import Dispatch
import Network
import Synchronization

/// Watches the device's network path with `NWPathMonitor` (Apple platforms only) and calls
/// `becameAvailable` each time it becomes satisfied after being unsatisfied
/// (``NetworkPathChanges``): a client waiting out a backoff then reconnects at once, since the
/// network it waited for is back. Stops watching when released.
final class NetworkPathWatcher: Sendable {
    private let monitor = NWPathMonitor()

    init(becameAvailable: @escaping @Sendable () -> Void) {
        let changes = Changes()
        monitor.pathUpdateHandler = { path in
            if changes.update(satisfied: path.status == .satisfied) { becameAvailable() }
        }
        monitor.start(queue: DispatchQueue(label: "JetstreamClient.NetworkPathWatcher"))
    }

    deinit {
        monitor.cancel()
    }

    /// The changes seen so far, shared with the monitor's handler.
    private final class Changes: Sendable {
        private let state = Mutex(NetworkPathChanges())

        func update(satisfied: Bool) -> Bool {
            state.withLock { $0.update(satisfied: satisfied) }
        }
    }
}
#endif
