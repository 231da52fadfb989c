import ServerSentEvents

/// The SSE subscribers of one client loop: parses each stream and records every delivery as
/// (subscriber, version, arrival time). Confined to its loop's thread; read after the loop is joined.
final class SubscriberGroup: ClientConnectionDelegate {
    struct Delivery {
        var subscriber: UInt32
        var version: UInt32
        var arrival: UInt64
    }

    private struct Stream {
        var accepted = false
        var sawFirstEvent = false
    }

    let loopIndex: Int
    let loopCount: Int
    let scopes: [ScopeFixture]
    let authority: String
    /// Resume from each scope's version at set-up (fan-out), or take the snapshot (idle).
    let resume: Bool
    let counters: BenchCounters
    private var streams: [Stream] = []
    /// Kept apart from `streams`: the parser's callback updates `streams` while it runs.
    private var parsers: [SSEParser] = []
    private(set) var deliveries: [Delivery] = []
    private(set) var otherEvents: [String: Int] = [:]
    private(set) var errors: [String: Int] = [:]

    init(
        loopIndex: Int, loopCount: Int, subscribers: Int, scopes: [ScopeFixture], authority: String,
        resume: Bool, counters: BenchCounters
    ) {
        self.loopIndex = loopIndex
        self.loopCount = loopCount
        self.scopes = scopes
        self.authority = authority
        self.resume = resume
        self.counters = counters
        let mine = subscribers > loopIndex ? (subscribers - loopIndex + loopCount - 1) / loopCount : 0
        streams = Array(repeating: Stream(), count: mine)
        parsers = Array(repeating: SSEParser(keepsData: false), count: mine)
    }

    /// Subscriber numbers (tags) this loop carries: every `loopCount`-th from `loopIndex`.
    var tags: StrideTo<Int> { stride(from: loopIndex, to: loopIndex + streams.count * loopCount, by: loopCount) }

    func scope(of subscriber: Int) -> ScopeFixture { scopes[subscriber % scopes.count] }

    func reserve(deliveries count: Int) {
        deliveries.reserveCapacity(count)
    }

    func connectionDidConnect(_ connection: ClientConnection) {
        let scope = scope(of: connection.tag)
        var request =
            "GET /v1/scopes/\(scope.name)/events HTTP/1.1\r\nHost: \(authority)\r\nAccept: text/event-stream\r\n"
        if resume { request += "Last-Event-ID: \(scope.version)\r\n" }
        connection.send(Array((request + "\r\n").utf8))
    }

    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event) {
        let slot = connection.tag / loopCount
        switch event {
        case .head(let head):
            if head.status == 200 {
                streams[slot].accepted = true
                counters.add(.connected)
            } else {
                errors["stream answered \(head.status)", default: 0] += 1
                counters.add(.failedConnections)
                connection.close()
            }
        case .body(let bytes):
            parsers[slot].consume(bytes) { event in
                self.handle(event, subscriber: connection.tag, slot: slot)
            }
        case .end:
            break
        }
    }

    private func handle(_ event: ServerSentEvent, subscriber: Int, slot: Int) {
        if !streams[slot].sawFirstEvent {
            streams[slot].sawFirstEvent = true
            if !resume { counters.add(.events) }
        }
        guard event.type == "changeset" else {
            otherEvents[event.type, default: 0] += 1
            return
        }
        guard let version = UInt32(event.lastEventID) else {
            errors["changeset without a numeric id", default: 0] += 1
            return
        }
        deliveries.append(Delivery(subscriber: UInt32(subscriber), version: version, arrival: MonotonicClock.now()))
        if resume { counters.add(.events) }
    }

    func connectionDidClose(_ connection: ClientConnection, error: String?) {
        guard let error else { return }
        errors[error, default: 0] += 1
        // A stream that never answered 200 failed to connect; one that did is counted as connected.
        if !streamAccepted(connection) { counters.add(.failedConnections) }
    }

    private func streamAccepted(_ connection: ClientConnection) -> Bool {
        let slot = connection.tag / loopCount
        return slot < streams.count && streams[slot].accepted
    }
}
