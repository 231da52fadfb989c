import Synchronization

/// Counters the loop threads bump and the main thread reads for progress and completion.
final class BenchCounters: Sendable {
    let connected = Atomic<Int>(0)
    let failedConnections = Atomic<Int>(0)
    let events = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let writersDone = Atomic<Bool>(false)
    let sent = Atomic<Int>(0)
    let answered = Atomic<Int>(0)

    enum Counter { case connected, failedConnections, events, requests, sent, answered }

    func add(_ counter: Counter, _ amount: Int = 1) {
        switch counter {
        case .connected: connected.add(amount, ordering: .relaxed)
        case .failedConnections: failedConnections.add(amount, ordering: .relaxed)
        case .events: events.add(amount, ordering: .relaxed)
        case .requests: requests.add(amount, ordering: .relaxed)
        case .sent: sent.add(amount, ordering: .relaxed)
        case .answered: answered.add(amount, ordering: .relaxed)
        }
    }

    var writersFinished: Bool { writersDone.load(ordering: .acquiring) }

    func markWritersFinished() { writersDone.store(true, ordering: .releasing) }

    func value(_ counter: Counter) -> Int {
        switch counter {
        case .connected: connected.load(ordering: .relaxed)
        case .failedConnections: failedConnections.load(ordering: .relaxed)
        case .events: events.load(ordering: .relaxed)
        case .requests: requests.load(ordering: .relaxed)
        case .sent: sent.load(ordering: .relaxed)
        case .answered: answered.load(ordering: .relaxed)
        }
    }
}
