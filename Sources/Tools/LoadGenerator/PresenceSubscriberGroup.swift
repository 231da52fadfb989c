import ServerSentEvents

/// The subscribers of `jetstream bench presence` on one client loop: each follows the scope on
/// `GET /v1/scopes/{name}/events` from its version at set-up and records every event carrying
/// this run's mark as (subscriber, member, sequence, arrival time). Confined to its loop's thread;
/// read after the loop is joined.
final class PresenceSubscriberGroup: ClientConnectionDelegate {
    struct Delivery {
        var subscriber: UInt32
        var member: UInt32
        var sequence: UInt32
        var arrival: UInt64
    }

    let loopIndex: Int
    let loopCount: Int
    let scope: ScopeFixture
    let authority: String
    let run: Int
    /// `presence` or `changeset`: the events that carry the updates.
    let eventType: String
    let counters: BenchCounters
    private var accepted: [Bool]
    private var parsers: [SSEParser]
    private(set) var deliveries: [Delivery] = []
    private(set) var otherEvents: [String: Int] = [:]
    private(set) var errors: [String: Int] = [:]

    init(
        loopIndex: Int, loopCount: Int, subscribers: Int, scope: ScopeFixture, authority: String, run: Int,
        eventType: String, counters: BenchCounters
    ) {
        self.loopIndex = loopIndex
        self.loopCount = loopCount
        self.scope = scope
        self.authority = authority
        self.run = run
        self.eventType = eventType
        self.counters = counters
        let mine = subscribers > loopIndex ? (subscribers - loopIndex + loopCount - 1) / loopCount : 0
        accepted = Array(repeating: false, count: mine)
        parsers = Array(repeating: SSEParser(), count: mine)
    }

    var tags: StrideTo<Int> { stride(from: loopIndex, to: loopIndex + accepted.count * loopCount, by: loopCount) }

    func reserve(deliveries count: Int) {
        deliveries.reserveCapacity(count)
    }

    func connectionDidConnect(_ connection: ClientConnection) {
        connection.send(
            Array(
                "GET /v1/scopes/\(scope.name)/events HTTP/1.1\r\nHost: \(authority)\r\nAccept: text/event-stream\r\nLast-Event-ID: \(scope.version)\r\n\r\n"
                    .utf8))
    }

    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event) {
        let slot = connection.tag / loopCount
        switch event {
        case .head(let head):
            if head.status == 200 {
                accepted[slot] = true
                counters.add(.connected)
            } else {
                errors["stream answered \(head.status)", default: 0] += 1
                counters.add(.failedConnections)
                connection.close()
            }
        case .body(let bytes):
            parsers[slot].consume(bytes) { event in self.handle(event, subscriber: connection.tag) }
        case .end:
            break
        }
    }

    private func handle(_ event: ServerSentEvent, subscriber: Int) {
        guard event.type == eventType, let mark = EventDataScanner.mark(in: event.data), mark.run == run else {
            otherEvents[event.type, default: 0] += 1
            return
        }
        deliveries.append(
            Delivery(
                subscriber: UInt32(subscriber), member: UInt32(mark.member), sequence: UInt32(mark.sequence),
                arrival: MonotonicClock.now()))
        counters.add(.events)
    }

    func connectionDidClose(_ connection: ClientConnection, error: String?) {
        guard let error else { return }
        errors[error, default: 0] += 1
        let slot = connection.tag / loopCount
        if slot >= accepted.count || !accepted[slot] { counters.add(.failedConnections) }
    }
}
