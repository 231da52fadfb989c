import ServerSentEvents

/// The SSE subscribers of one client loop: parses each stream and records every delivery as
/// (subscriber, scope, version, arrival time). Confined to its loop's thread; read after the loop
/// is joined.
final class SubscriberGroup: ClientConnectionDelegate {
    struct Delivery {
        var subscriber: UInt32
        var scope: UInt32
        var version: UInt32
        var arrival: UInt64
    }

    private struct Stream {
        var accepted = false
        var sawFirstEvent = false
        var snapshots = 0
    }

    let loopIndex: Int
    let loopCount: Int
    let scopes: [ScopeFixture]
    let layout: StreamScopes
    let authority: String
    /// Resume from each scope's version at set-up (fan-out), or take the snapshot (idle).
    let resume: Bool
    let counters: BenchCounters
    /// A many-scope stream's events name their scope in the data; this finds its index.
    private let scopeIndex: [[UInt8]: Int]
    private var streams: [Stream] = []
    /// Kept apart from `streams`: the parser's callback updates `streams` while it runs.
    private var parsers: [SSEParser] = []
    private(set) var deliveries: [Delivery] = []
    private(set) var otherEvents: [String: Int] = [:]
    private(set) var errors: [String: Int] = [:]

    init(
        loopIndex: Int, loopCount: Int, subscribers: Int, scopes: [ScopeFixture], layout: StreamScopes? = nil,
        authority: String, resume: Bool, counters: BenchCounters
    ) {
        self.loopIndex = loopIndex
        self.loopCount = loopCount
        self.scopes = scopes
        self.layout = layout ?? StreamScopes(count: scopes.count, perStream: nil)
        self.authority = authority
        self.resume = resume
        self.counters = counters
        var index: [[UInt8]: Int] = [:]
        for (offset, scope) in scopes.enumerated() { index[Array(scope.name.utf8)] = offset }
        scopeIndex = index
        let mine = subscribers > loopIndex ? (subscribers - loopIndex + loopCount - 1) / loopCount : 0
        streams = Array(repeating: Stream(), count: mine)
        // Only a many-scope stream needs the data: it names the scope and the version.
        parsers = Array(repeating: SSEParser(keepsData: self.layout.perStream != nil), count: mine)
    }

    /// Subscriber numbers (tags) this loop carries: every `loopCount`-th from `loopIndex`.
    var tags: StrideTo<Int> { stride(from: loopIndex, to: loopIndex + streams.count * loopCount, by: loopCount) }

    func reserve(deliveries count: Int) {
        deliveries.reserveCapacity(count)
    }

    func connectionDidConnect(_ connection: ClientConnection) {
        var request: String
        if layout.perStream != nil {
            let query = layout.scopes(of: connection.tag).map { index in
                let scope = scopes[index]
                return "scope=\(scope.name)" + (resume ? "@\(scope.version)" : "")
            }
            request = "GET /v1/events?\(query.joined(separator: "&")) HTTP/1.1\r\n"
        } else {
            let scope = scopes[layout.scope(of: connection.tag, slot: 0)]
            request = "GET /v1/scopes/\(scope.name)/events HTTP/1.1\r\n"
            if resume { request += "Last-Event-ID: \(scope.version)\r\n" }
        }
        request += "Host: \(authority)\r\nAccept: text/event-stream\r\n\r\n"
        connection.send(Array(request.utf8))
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
        if !resume { noteReadiness(event, slot: slot) }
        guard event.type == "changeset" else {
            otherEvents[event.type, default: 0] += 1
            return
        }
        let scope: Int
        let version: Int
        if layout.perStream != nil {
            guard let name = EventDataScanner.string(after: EventDataScanner.scopeKey, in: event.data),
                let index = scopeIndex[Array(name)],
                let number = EventDataScanner.integer(after: EventDataScanner.versionKey, in: event.data)
            else {
                errors["changeset without a known scope and a version in its data", default: 0] += 1
                return
            }
            scope = index
            version = number
        } else {
            guard let number = Int(event.lastEventID) else {
                errors["changeset without a numeric id", default: 0] += 1
                return
            }
            scope = layout.scope(of: subscriber, slot: 0)
            version = number
        }
        deliveries.append(
            Delivery(
                subscriber: UInt32(subscriber), scope: UInt32(scope), version: UInt32(truncatingIfNeeded: version),
                arrival: MonotonicClock.now()))
        if resume { counters.add(.events) }
    }

    /// An idle stream is ready once it has its first event (one scope) or a snapshot of every
    /// scope it carries (many).
    private func noteReadiness(_ event: ServerSentEvent, slot: Int) {
        if layout.perStream == nil {
            guard !streams[slot].sawFirstEvent else { return }
            streams[slot].sawFirstEvent = true
            counters.add(.events)
        } else if event.type == "snapshot" {
            streams[slot].snapshots += 1
            if streams[slot].snapshots == layout.width { counters.add(.events) }
        }
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
