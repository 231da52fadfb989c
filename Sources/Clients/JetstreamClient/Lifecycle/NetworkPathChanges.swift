/// Which updates of the device's network path mean "the network came back": a path that becomes
/// satisfied after one that was not. The first update (the path when watching starts) is the
/// baseline; a satisfied path that changes interface (Wi-Fi to cellular) is no return. Pure: the
/// caller feeds `NWPathMonitor`'s updates (``NetworkPathWatcher``, on Apple platforms).
///
/// ```swift
/// var changes = NetworkPathChanges()
/// changes.update(satisfied: true)    // false: the baseline
/// changes.update(satisfied: false)   // false: gone
/// changes.update(satisfied: true)    // true: back — reconnect at once
/// ```
struct NetworkPathChanges: Sendable, Equatable {
    /// Whether the last path was satisfied; nil before the first update.
    private(set) var lastSatisfied: Bool?

    /// The path now is satisfied (or not): true when the one before was not.
    @discardableResult
    mutating func update(satisfied: Bool) -> Bool {
        defer { lastSatisfied = satisfied }
        return satisfied && lastSatisfied == false
    }
}
