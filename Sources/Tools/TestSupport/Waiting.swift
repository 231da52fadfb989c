/// Polls `condition` every 5 ms for up to `seconds`; true once it holds. For waiting on state
/// that other threads change, without fixed sleeps and without blocking a cooperative thread.
public func waitUntil(seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
