import JetstreamJSON

/// What a fan-out run measured.
public struct FanoutResult: Sendable {
    public var target: String
    public var configuration: FanoutConfiguration
    public var sent = 0
    public var accepted = 0
    public var failed: [String: Int] = [:]
    public var expected = 0
    public var received = 0
    public var missing = 0
    public var duplicate = 0
    public var outOfOrder = 0
    /// Events other than `changeset` (a `reset` here means a resume went wrong).
    public var otherEvents: [String: Int] = [:]
    public var streamErrors: [String: Int] = [:]
    public var connectSeconds = 0.0
    public var durationSeconds = 0.0
    public var latency = LatencySummary()
    public var postLatency = LatencySummary()
    public var timedOut = false

    public var deliveriesPerSecond: Double { durationSeconds > 0 ? Double(received) / durationSeconds : 0 }

    /// Every expected event arrived exactly once and in order, and no change set or stream failed.
    public var isClean: Bool {
        missing == 0 && duplicate == 0 && outOfOrder == 0 && failed.isEmpty && streamErrors.isEmpty && !timedOut
            && accepted == configuration.changeSets
    }

    public var json: JSONValue {
        typealias F = ReportFormatting
        // Present only for many-scope streams, so a single-scope run's object is as it was.
        let perStream = configuration.scopesPerStream.map { [("scopesPerStream", F.integer($0))] } ?? []
        return F.object(
            [
                ("mode", "fanout"), ("target", .string(target)),
                ("subscribers", F.integer(configuration.subscribers)), ("scopes", F.integer(configuration.scopes)),
            ] + perStream + [
                ("writers", F.integer(configuration.writers)), ("rate", F.number(configuration.rate)),
                (
                    "changeSets",
                    F.object([
                        ("sent", F.integer(sent)), ("accepted", F.integer(accepted)), ("failed", F.counts(failed)),
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
                ("deliveriesPerSecond", F.number(deliveriesPerSecond, places: 1)),
                ("durationSeconds", F.number(durationSeconds)), ("connectSeconds", F.number(connectSeconds)),
                ("latencyMs", F.latency(latency)), ("postLatencyMs", F.latency(postLatency)),
                ("otherEvents", F.counts(otherEvents)), ("streamErrors", F.counts(streamErrors)),
                ("timedOut", .bool(timedOut)), ("clean", .bool(isClean)),
            ])
    }

    public var table: String {
        typealias F = ReportFormatting
        let c = configuration
        var rows: [(String, String)] = [
            (
                "subscribers",
                "\(F.grouped(c.subscribers)) on \(c.scopes) scope(s)"
                    + (c.scopesPerStream.map { ", \($0) per stream (GET /v1/events)" } ?? "")
                    + ", connected in \(F.fixed(connectSeconds)) s"
            ),
            (
                "change sets",
                "\(F.grouped(accepted)) accepted of \(F.grouped(sent)) sent (\(F.grouped(c.changeSets)) asked, \(F.fixed(c.rate, 0))/s, \(c.writers) writers)"
            ),
            (
                "deliveries",
                "\(F.grouped(received)) of \(F.grouped(expected)) expected; missing \(missing), duplicate \(duplicate), out of order \(outOfOrder)"
            ),
            (
                "throughput",
                "\(F.grouped(Int(deliveriesPerSecond.rounded()))) deliveries/s over \(F.fixed(durationSeconds)) s"
            ),
            ("latency ms", F.latencyLine(latency)),
            ("POST ms", F.latencyLine(postLatency)),
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
        return F.table(title: "jetstream bench fanout → \(target)", rows: rows)
    }
}
