/// The members of `jetstream bench presence` on their own loop: member m sends its update n at
/// start + m / (members × rate) + n / rate (the members are spread evenly over each period), one
/// keep-alive connection and one request in flight each; a member still waiting for an answer
/// sends its due update as soon as the answer comes, and latency counts from the moment it is
/// actually sent. Each update is a presence `PUT` or, to compare, a one-fragment change set `POST`,
/// and carries the mark `pb-RUN-MEMBER-SEQUENCE` the subscribers find in what they receive.
/// Confined to its loop's thread.
final class PresenceUpdaterGroup: ClientConnectionDelegate {
    struct Update {
        var sent: UInt64 = 0
        var answered: UInt64 = 0
        var status = 0
    }

    private struct Member {
        var connection: ClientConnection?
        var next = 0
        var inFlight = false
        var head: HTTPResponseHead?
        var updates: [Update]
    }

    let configuration: PresenceConfiguration
    let scope: ScopeFixture
    let authority: String
    let run: Int
    let counters: BenchCounters
    private var members: [Member]
    private var startedAt: UInt64?
    private var finished = 0
    private(set) var errors: [String: Int] = [:]

    init(
        configuration: PresenceConfiguration, scope: ScopeFixture, authority: String, run: Int, counters: BenchCounters
    ) {
        self.configuration = configuration
        self.scope = scope
        self.authority = authority
        self.run = run
        self.counters = counters
        let member = Member(updates: Array(repeating: Update(), count: configuration.updatesPerMember))
        members = Array(repeating: member, count: configuration.members)
    }

    /// Every member's updates, indexed [member][sequence]; read after the loop is joined.
    var updates: [[Update]] { members.map(\.updates) }

    var allConnected: Bool { members.allSatisfy { $0.connection != nil } }

    func connectionDidConnect(_ connection: ClientConnection) {
        members[connection.tag].connection = connection
    }

    /// Sends every update that is due on a member with nothing in flight; called from the tick.
    func sendDue(now: UInt64) {
        let start = startedAt ?? now
        startedAt = start
        for member in members.indices where !members[member].inFlight {
            sendIfDue(member, now: now, start: start)
        }
    }

    private func dueTime(member: Int, sequence: Int, start: UInt64) -> UInt64 {
        let rate = configuration.ratePerMember
        let offset = Double(member) / (Double(configuration.members) * rate) + Double(sequence) / rate
        return start + UInt64(offset * 1e9)
    }

    private func sendIfDue(_ member: Int, now: UInt64, start: UInt64) {
        let sequence = members[member].next
        guard sequence < configuration.updatesPerMember, let connection = members[member].connection,
            dueTime(member: member, sequence: sequence, start: start) <= now
        else { return }
        members[member].next += 1
        members[member].inFlight = true
        members[member].head = nil
        members[member].updates[sequence].sent = MonotonicClock.now()
        counters.add(.sent)
        connection.send(request(member: member, sequence: sequence))
    }

    private func request(member: Int, sequence: Int) -> [UInt8] {
        let mark = "pb-\(run)-\(member)-\(sequence)"
        if configuration.asChangeSets {
            return scope.postRequest(
                scope.renameRootBody(property: configuration.property, value: mark), authority: authority)
        }
        // A pointer that moves: small, like what the demo sends.
        let body = Array(
            #"{"x":\#((member * 37 + sequence * 7) % 1600),"y":\#((member * 11 + sequence * 5) % 900),"mark":"\#(mark)"}"#
                .utf8)
        var request = Array(
            "PUT /v1/scopes/\(scope.name)/presence/\(configuration.clientPrefix)\(member)?ttl=\(configuration.ttlSeconds) HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                .utf8)
        request.append(contentsOf: body)
        return request
    }

    func connection(_ connection: ClientConnection, didReceive event: HTTPResponseParser.Event) {
        let member = connection.tag
        switch event {
        case .head(let head): members[member].head = head
        case .body: break
        case .end:
            guard members[member].inFlight else { return }
            let now = MonotonicClock.now()
            let sequence = members[member].next - 1
            let status = members[member].head?.status ?? 0
            members[member].updates[sequence].answered = now
            members[member].updates[sequence].status = status
            if !(200..<300).contains(status) { errors["answered \(status)", default: 0] += 1 }
            members[member].inFlight = false
            counters.add(.answered)
            if members[member].next == configuration.updatesPerMember {
                finished += 1
                if finished == members.count { counters.markWritersFinished() }
            } else if let start = startedAt {
                sendIfDue(member, now: now, start: start)
            }
        }
    }

    func connectionDidClose(_ connection: ClientConnection, error: String?) {
        let member = connection.tag
        members[member].connection = nil
        if let error { errors["member: \(error)", default: 0] += 1 }
        let wasInFlight = members[member].inFlight
        members[member].inFlight = false
        if members[member].next < configuration.updatesPerMember || wasInFlight {
            // This member sends nothing more: its remaining updates count as not accepted.
            members[member].next = configuration.updatesPerMember
            finished += 1
            if finished == members.count { counters.markWritersFinished() }
        }
    }
}
