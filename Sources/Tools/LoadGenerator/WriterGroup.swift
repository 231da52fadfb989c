/// The fan-out's writers on their own loop: POST change sets on keep-alive connections at a fixed
/// overall rate (change set n is due at start + n / rate; a busy writer delays it, and latency is
/// measured from the moment it is actually sent). Confined to its loop's thread.
final class WriterGroup: ClientConnectionDelegate {
    struct Post {
        var scope: Int
        var version: Int?
        var sent: UInt64
        var answered: UInt64
        var status: Int
    }

    private struct Writer {
        var connection: ClientConnection?
        var inFlight: (sequence: Int, sent: UInt64)?
        var head: HTTPResponseHead?
        var body: [UInt8] = []
    }

    let scopes: [ScopeFixture]
    let total: Int
    let rate: Double
    let authority: String
    let property: String
    let insertInto: (collection: String, elementClass: String)?
    let counters: BenchCounters
    /// Makes the UUIDs of inserted objects unique across runs against one server.
    private let runTag = UInt32.random(in: 0...UInt32.max)
    private var writers: [Writer]
    private var idle: [Int] = []
    private var nextSequence = 0
    private var startedAt: UInt64?
    private var closedWriters = 0
    private(set) var posts: [Post] = []
    private(set) var errors: [String: Int] = [:]

    init(
        writers: Int, scopes: [ScopeFixture], total: Int, rate: Double, authority: String, property: String,
        insertInto: (collection: String, elementClass: String)? = nil, counters: BenchCounters
    ) {
        self.insertInto = insertInto
        self.writers = Array(repeating: Writer(), count: writers)
        self.scopes = scopes
        self.total = total
        self.rate = rate
        self.authority = authority
        self.property = property
        self.counters = counters
        posts.reserveCapacity(total)
    }

    /// True once any writer is connected: the schedule starts then, not while connecting.
    var hasConnectedWriter: Bool { !idle.isEmpty || writers.contains { $0.connection != nil } }

    func connectionDidConnect(_ connection: ClientConnection) {
        writers[connection.tag].connection = connection
        idle.append(connection.tag)
    }

    /// Sends every change set that is due on an idle writer; called from the loop's tick.
    func sendDue(now: UInt64) {
        let start = startedAt ?? now
        startedAt = start
        let due = rate > 0 ? min(total, Int(Double(now - start) * rate / 1e9) + 1) : total
        while nextSequence < due, let writer = idle.popLast() {
            send(sequence: nextSequence, on: writer, now: now)
            nextSequence += 1
        }
    }

    private func send(sequence: Int, on writer: Int, now: UInt64) {
        guard let connection = writers[writer].connection else { return }
        let scope = scopes[writer % scopes.count]
        let body: [UInt8]
        if let insertInto {
            let uuid = "\(hex(runTag, 8))-0000-4000-8000-\(hex(UInt64(sequence), 12))"
            body = scope.insertBody(
                collection: insertInto.collection, elementClass: insertInto.elementClass, uuid: uuid)
        } else {
            body = scope.renameRootBody(property: property, value: "bench \(sequence) w\(writer)")
        }
        writers[writer].inFlight = (sequence, MonotonicClock.now())
        writers[writer].head = nil
        writers[writer].body.removeAll(keepingCapacity: true)
        counters.add(.sent)
        connection.send(scope.postRequest(body, authority: authority))
    }

    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event) {
        let writer = connection.tag
        switch event {
        case .head(let head): writers[writer].head = head
        case .body(let bytes): writers[writer].body.append(contentsOf: bytes)
        case .end:
            guard let inFlight = writers[writer].inFlight else { return }
            let now = MonotonicClock.now()
            let status = writers[writer].head?.status ?? 0
            let version = status == 200 ? ResponseVersionScanner.version(in: writers[writer].body) : nil
            posts.append(
                Post(
                    scope: writer % scopes.count, version: version, sent: inFlight.sent, answered: now, status: status))
            if status != 200 { errors["POST answered \(status)", default: 0] += 1 }
            writers[writer].inFlight = nil
            counters.add(.answered)
            idle.append(writer)
            sendDue(now: now)
            if posts.count == total { counters.markWritersFinished() }
        }
    }

    func connectionDidClose(_ connection: ClientConnection, error: String?) {
        let writer = connection.tag
        writers[writer].connection = nil
        idle.removeAll { $0 == writer }
        if let error { errors["writer: \(error)", default: 0] += 1 }
        if let inFlight = writers[writer].inFlight {
            writers[writer].inFlight = nil
            posts.append(
                Post(scope: writer % scopes.count, version: nil, sent: inFlight.sent, answered: 0, status: 0))
            if posts.count == total { counters.markWritersFinished() }
        }
        closedWriters += 1
        if closedWriters == writers.count && nextSequence < total {
            errors["writers: every connection closed before all change sets were sent", default: 0] += 1
            counters.markWritersFinished()
        }
    }
}

/// `value` as `digits` lowercase hexadecimal digits, zero-padded.
private func hex<Value: BinaryInteger>(_ value: Value, _ digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}
