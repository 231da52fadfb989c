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
