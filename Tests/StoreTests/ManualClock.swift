import Synchronization

/// A clock the test moves by hand (milliseconds since 1970).
final class ManualClock: Sendable {
    private let now = Mutex<Int64>(1_700_000_000_000)

    func advance(byMilliseconds milliseconds: Int64) { now.withLock { $0 += milliseconds } }

    var milliseconds: Int64 { now.withLock { $0 } }

    var read: @Sendable () -> Int64 { { self.milliseconds } }
}
