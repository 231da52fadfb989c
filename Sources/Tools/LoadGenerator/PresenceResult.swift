import JetstreamJSON

/// What a presence run measured.
public struct PresenceResult: Sendable {
    public var target: String
    public var configuration: PresenceConfiguration
    public var sent = 0
    public var accepted = 0
    public var statuses: [Int: Int] = [:]
    public var failed: [String: Int] = [:]
    public var expected = 0
    public var received = 0
    public var missing = 0
    public var duplicate = 0
    public var outOfOrder = 0
    public var otherEvents: [String: Int] = [:]
    public var streamErrors: [String: Int] = [:]
    public var connectSeconds = 0.0
    /// First update sent → last update answered.
    public var sendSeconds = 0.0
    /// First update sent → last delivery.
    public var durationSeconds = 0.0
    public var latency = LatencySummary()
    public var requestLatency = LatencySummary()
    public var timedOut = false

    public var updatesPerSecond: Double { sendSeconds > 0 ? Double(accepted) / sendSeconds : 0 }
    public var deliveriesPerSecond: Double { durationSeconds > 0 ? Double(received) / durationSeconds : 0 }

    public var isClean: Bool {
        missing == 0 && duplicate == 0 && outOfOrder == 0 && failed.isEmpty && streamErrors.isEmpty && !timedOut
            && accepted == configuration.members * configuration.updatesPerMember
    }

    /// Joins what the subscribers saw with what the members sent, by (member, sequence).
    mutating func fill(
        updates: [[PresenceUpdaterGroup.Update]], groups: [PresenceSubscriberGroup], updateErrors: [String: Int]
    ) {
        let c = configuration
        var firstSend = UInt64.max
        var lastAnswer: UInt64 = 0
        for update in updates.joined() where update.sent > 0 {
            sent += 1
            firstSend = min(firstSend, update.sent)
            statuses[update.status, default: 0] += 1
            guard (200..<300).contains(update.status), update.answered >= update.sent else { continue }
            accepted += 1
            lastAnswer = max(lastAnswer, update.answered)
            requestLatency.record(nanoseconds: update.answered - update.sent)
        }
        failed = updateErrors
        expected = accepted * c.subscribers
        if firstSend != .max && lastAnswer > firstSend { sendSeconds = Double(lastAnswer - firstSend) / 1e9 }

        // The last sequence each subscriber got from each member (-1: none yet).
        var last = Array(repeating: -1, count: c.subscribers * c.members)
        var lastArrival: UInt64 = 0
        for group in groups {
            for delivery in group.deliveries {
                let member = Int(delivery.member)
                let sequence = Int(delivery.sequence)
                guard member < c.members, sequence < c.updatesPerMember,
                    (200..<300).contains(updates[member][sequence].status)
                else {
                    otherEvents["update not accepted in this run", default: 0] += 1
                    continue
                }
                let stream = Int(delivery.subscriber) * c.members + member
                if sequence == last[stream] {
                    duplicate += 1
                    continue
                }
                if sequence < last[stream] {
                    outOfOrder += 1
                    continue
                }
                last[stream] = sequence
                received += 1
                lastArrival = max(lastArrival, delivery.arrival)
                let sentAt = updates[member][sequence].sent
                latency.record(nanoseconds: delivery.arrival > sentAt ? delivery.arrival - sentAt : 0)
            }
            for (type, count) in group.otherEvents { otherEvents[type, default: 0] += count }
            for (reason, count) in group.errors { streamErrors[reason, default: 0] += count }
        }
        missing = max(0, expected - received)
        if firstSend != .max && lastArrival > firstSend { durationSeconds = Double(lastArrival - firstSend) / 1e9 }
    }

    private var kind: String { configuration.asChangeSets ? "changeset" : "presence" }

    public var json: JSONValue {
        typealias F = ReportFormatting
        let c = configuration
        return F.object([
            ("mode", "presence"), ("target", .string(target)), ("updates", .string(kind)),
            ("scope", .string(c.scope)), ("members", F.integer(c.members)),
            ("ratePerMember", F.number(c.ratePerMember)), ("subscribers", F.integer(c.subscribers)),
            (
                "requests",
                F.object([
                    ("sent", F.integer(sent)), ("accepted", F.integer(accepted)),
                    (
                        "statuses",
                        F.counts(Dictionary(uniqueKeysWithValues: statuses.map { (String($0.key), $0.value) }))
                    ),
                    ("failed", F.counts(failed)),
                ])
            ),
            (
                "deliveries",
                F.object([
                    ("expected", F.integer(expected)), ("received", F.integer(received)),
                    ("missing", F.integer(missing)), ("duplicate", F.integer(duplicate)),
                    ("outOfOrder", F.integer(outOfOrder)),
                ])
            ),
            ("updatesPerSecond", F.number(updatesPerSecond, places: 1)),
            ("deliveriesPerSecond", F.number(deliveriesPerSecond, places: 1)),
            ("sendSeconds", F.number(sendSeconds)), ("durationSeconds", F.number(durationSeconds)),
            ("connectSeconds", F.number(connectSeconds)),
            ("latencyMs", F.latency(latency)), ("requestLatencyMs", F.latency(requestLatency)),
            ("otherEvents", F.counts(otherEvents)), ("streamErrors", F.counts(streamErrors)),
            ("timedOut", .bool(timedOut)), ("clean", .bool(isClean)),
        ])
    }

    public var table: String {
        typealias F = ReportFormatting
        let c = configuration
        let request = c.asChangeSets ? "POST change set" : "PUT presence"
        var rows: [(String, String)] = [
            ("subscribers", "\(F.grouped(c.subscribers)) on \(c.scope), connected in \(F.fixed(connectSeconds)) s"),
            (
                "updates",
                "\(F.grouped(accepted)) accepted of \(F.grouped(sent)) sent (\(c.members) members × \(F.fixed(c.ratePerMember, 1))/s × \(c.updatesPerMember), each a \(request))"
            ),
            ("update rate", "\(F.fixed(updatesPerSecond, 0))/s over \(F.fixed(sendSeconds)) s"),
            (
                "deliveries",
                "\(F.grouped(received)) of \(F.grouped(expected)) expected; missing \(missing), duplicate \(duplicate), out of order \(outOfOrder)"
            ),
            (
                "throughput",
                "\(F.grouped(Int(deliveriesPerSecond.rounded()))) deliveries/s over \(F.fixed(durationSeconds)) s"
            ),
            ("latency ms", F.latencyLine(latency)),
            ("\(c.asChangeSets ? "POST" : "PUT") ms", F.latencyLine(requestLatency)),
        ]
        for (reason, count) in failed.sorted(by: { $0.key < $1.key }) {
            rows.append(("failed", "\(count) × \(reason)"))
        }
        for (reason, count) in streamErrors.sorted(by: { $0.key < $1.key }) {
            rows.append(("stream error", "\(count) × \(reason)"))
        }
        for (type, count) in otherEvents.sorted(by: { $0.key < $1.key }) {
            rows.append(("other events", "\(count) × \(type)"))
        }
        if timedOut { rows.append(("timed out", "the run hit --timeout before every event arrived")) }
        rows.append(("result", isClean ? "clean" : "NOT CLEAN"))
        return F.table(title: "jetstream bench presence → \(target)", rows: rows)
    }
}
