import Glibc

/// Polls `condition` every 10 ms for up to `seconds`; true once it holds. For waiting on state
/// that other threads change, without fixed sleeps.
func waitUntil(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let attempts = Int(seconds * 100)
    for _ in 0..<attempts {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
