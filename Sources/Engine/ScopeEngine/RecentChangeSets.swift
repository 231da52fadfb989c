/// The latest change-set events of a scope, oldest first, in a fixed-capacity ring: appending is
/// O(1) and so is finding a version (versions are contiguous, so a version's slot is computed).
///
/// ```swift
/// var recent = RecentChangeSets(capacity: 256)
/// recent.append(event)                        // version 7
/// recent.events(after: 5)                     // [6, 7] if 6 is still held, else nil
/// ```
struct RecentChangeSets: Sendable {
    private var slots: [ScopeEvent?]
    /// Index of the oldest event in `slots`.
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) {
        slots = Array(repeating: nil, count: max(0, capacity))
    }

    var capacity: Int { slots.count }
    var isEmpty: Bool { count == 0 }

    /// The oldest version held, nil when empty.
    var firstVersion: Int? { isEmpty ? nil : slots[head]!.version }
    /// The newest version held, nil when empty.
    var lastVersion: Int? { isEmpty ? nil : slots[(head + count - 1) % capacity]!.version }

    /// Appends the next version; a version that does not follow the newest one starts the ring
    /// anew (nothing older can then be served from it).
    mutating func append(_ event: ScopeEvent) {
        guard capacity > 0, let version = event.version else { return }
        if let last = lastVersion, last + 1 != version { removeAll() }
        if count == capacity {
            slots[head] = event
            head = (head + 1) % capacity
        } else {
            slots[(head + count) % capacity] = event
            count += 1
        }
    }

    mutating func removeAll() {
        for index in slots.indices { slots[index] = nil }
        head = 0
        count = 0
    }

    /// Whether the ring holds every version after `version` (up to its newest one).
    func holdsAll(after version: Int) -> Bool {
        guard let first = firstVersion else { return false }
        return first <= version + 1
    }

    /// The events after `version`, oldest first and at most `limit`; nil when the ring does not
    /// hold all of them.
    func events(after version: Int, limit: Int = .max) -> [ScopeEvent]? {
        guard let first = firstVersion, first <= version + 1 else { return nil }
        let skip = max(0, version + 1 - first)
        let available = count - skip
        guard available > 0, limit > 0 else { return [] }
        return (0..<min(available, limit)).map { slots[(head + skip + $0) % capacity]! }
    }
}
