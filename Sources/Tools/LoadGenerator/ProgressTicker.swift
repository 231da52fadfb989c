import Glibc

/// Calls a status closure about once a second while the main thread waits for a run.
struct ProgressTicker {
    private var nextReport: UInt64
    private let started: UInt64

    init(started: UInt64) {
        self.started = started
        nextReport = started + 1_000_000_000
    }

    /// Seconds since the start when a report is due, else nil.
    mutating func due(at now: UInt64) -> Double? {
        guard now >= nextReport else { return nil }
        nextReport = now + 1_000_000_000
        return Double(now - started) / 1e9
    }

    /// Sleeps the calling thread for `milliseconds`.
    static func sleep(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        _ = nanosleep(&request, nil)
    }

    /// Polls `isDone` every 5 ms until it holds (true) or `deadline` passes (false), calling
    /// `report` with the seconds elapsed about once a second.
    mutating func wait(until deadline: UInt64, report: (Double) -> Void, isDone: () -> Bool) -> Bool {
        while !isDone() {
            let now = MonotonicClock.now()
            if now >= deadline { return false }
            if let elapsed = due(at: now) { report(elapsed) }
            Self.sleep(milliseconds: 5)
        }
        return true
    }
}

/// Nanoseconds on CLOCK_MONOTONIC: comparable across the load generator's threads.
public enum MonotonicClock {
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

/// A joinable POSIX thread running one closure (the load generator's loops are long-lived threads,
/// not tasks, so they never block the cooperative pool).
public final class BackgroundThread: @unchecked Sendable {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private var thread = pthread_t()

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        if created != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            fatalError("pthread_create failed: \(String(cString: strerror(created)))")
        }
    }

    /// Waits for the closure to return.
    public func join() {
        pthread_join(thread, nil)
    }
}
