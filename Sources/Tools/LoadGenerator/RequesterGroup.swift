/// The connections of one client loop in a `write` or `read` run: each sends its next request as
/// soon as the previous answer has ended, until the deadline. Confined to its loop's thread.
final class RequesterGroup: ClientConnectionDelegate {
    let loopIndex: Int
    let loopCount: Int
    let connections: Int
    let deadline: UInt64
    let counters: BenchCounters
    /// Builds connection `tag`'s `sequence`-th request.
    let makeRequest: (_ tag: Int, _ sequence: Int) -> [UInt8]
    private var sentAt: [UInt64]
    private var sequence: [Int]
    private var bodyBytes: [Int]
    private var status: [Int]
    private var open = 0
    private(set) var latency = LatencySummary()
    private(set) var statuses: [Int: Int] = [:]
    private(set) var errors: [String: Int] = [:]
    private(set) var lastAnswer: UInt64 = 0
    private(set) var firstSend: UInt64 = .max
    private(set) var responseBytes = 0

    init(
        loopIndex: Int, loopCount: Int, connections: Int, deadline: UInt64, counters: BenchCounters,
        makeRequest: @escaping (_ tag: Int, _ sequence: Int) -> [UInt8]
    ) {
        self.loopIndex = loopIndex
        self.loopCount = loopCount
        self.connections = connections
        self.deadline = deadline
        self.counters = counters
        self.makeRequest = makeRequest
        let mine = connections > loopIndex ? (connections - loopIndex + loopCount - 1) / loopCount : 0
        sentAt = Array(repeating: 0, count: mine)
        sequence = Array(repeating: 0, count: mine)
        bodyBytes = Array(repeating: 0, count: mine)
        status = Array(repeating: 0, count: mine)
        open = mine
    }

    var tags: StrideTo<Int> { stride(from: loopIndex, to: loopIndex + sentAt.count * loopCount, by: loopCount) }
    var isFinished: Bool { open == 0 }

    func connectionDidConnect(_ connection: ClientConnection) {
        sendNext(on: connection)
    }

    private func sendNext(on connection: ClientConnection) {
        let now = MonotonicClock.now()
        guard now < deadline else {
            connection.close()
            return
        }
        let slot = connection.tag / loopCount
        sentAt[slot] = now
        firstSend = min(firstSend, now)
        bodyBytes[slot] = 0
        connection.send(makeRequest(connection.tag, sequence[slot]))
        sequence[slot] += 1
    }

    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event) {
        let slot = connection.tag / loopCount
        switch event {
        case .head(let head): status[slot] = head.status
        case .body(let bytes): bodyBytes[slot] += bytes.count
        case .end:
            let now = MonotonicClock.now()
            latency.record(nanoseconds: now - sentAt[slot])
            statuses[status[slot], default: 0] += 1
            if (200..<300).contains(status[slot]) { responseBytes = bodyBytes[slot] }
            lastAnswer = now
            counters.add(.requests)
            sendNext(on: connection)
        }
    }

    func connectionDidClose(_ connection: ClientConnection, error: String?) {
        open -= 1
        if let error { errors[error, default: 0] += 1 }
    }
}
