import Synchronization

/// Whether the gateway is draining for shutdown: `/readyz` answers 503 and event streams end
/// with `event: closing` from the moment it is set (it is never unset).
final class DrainState: Sendable {
    private let draining = Atomic<Bool>(false)

    var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Sets the state; returns whether this call was the one that set it.
    func begin() -> Bool {
        !draining.exchange(true, ordering: .acquiringAndReleasing)
    }
}
