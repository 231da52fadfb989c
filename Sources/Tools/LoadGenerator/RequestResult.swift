import JetstreamJSON

/// What a `write` or `read` run measured.
public struct RequestResult: Sendable {
    public var target: String
    public var mode: String
    public var connections: Int
    public var scopes: Int?
    public var path: String?
    public var durationSeconds = 0.0
    public var statuses: [Int: Int] = [:]
    public var errors: [String: Int] = [:]
    public var latency = LatencySummary()
    public var bytesPerResponse = 0

    public var requests: Int { statuses.values.reduce(0, +) }
    public var succeeded: Int { statuses.filter { (200..<300).contains($0.key) }.values.reduce(0, +) }
    public var requestsPerSecond: Double { durationSeconds > 0 ? Double(succeeded) / durationSeconds : 0 }
    /// Every answer was 2xx and no connection failed.
    public var isClean: Bool { succeeded == requests && requests > 0 && errors.isEmpty }

    public var json: JSONValue {
        typealias F = ReportFormatting
        var members: [(String, JSONValue)] = [
            ("mode", .string(mode)), ("target", .string(target)), ("connections", F.integer(connections)),
        ]
        if let scopes { members.append(("scopes", F.integer(scopes))) }
        if let path { members.append(("path", .string(path))) }
        members += [
            ("durationSeconds", F.number(durationSeconds)), ("requests", F.integer(requests)),
            ("succeeded", F.integer(succeeded)), ("requestsPerSecond", F.number(requestsPerSecond, places: 1)),
            ("statuses", F.counts(Dictionary(uniqueKeysWithValues: statuses.map { (String($0.key), $0.value) }))),
            ("errors", F.integer(errors.values.reduce(0, +))), ("errorReasons", F.counts(errors)),
            ("latencyMs", F.latency(latency)),
        ]
        if mode == "read" { members.append(("bytesPerResponse", F.integer(bytesPerResponse))) }
        members.append(("clean", .bool(isClean)))
        return F.object(members)
    }

    public var table: String {
        typealias F = ReportFormatting
        var rows: [(String, String)] = [
            (
                "connections",
                "\(connections)" + (scopes.map { " on \($0) scope(s)" } ?? "") + (path.map { " GET \($0)" } ?? "")
            ),
            ("requests", "\(F.grouped(requests)) in \(F.fixed(durationSeconds)) s, \(F.grouped(succeeded)) 2xx"),
            ("throughput", "\(F.grouped(Int(requestsPerSecond.rounded()))) req/s (2xx)"),
            ("latency ms", F.latencyLine(latency)),
        ]
        if mode == "read" { rows.append(("response body", "\(F.grouped(bytesPerResponse)) bytes")) }
        for (status, count) in statuses.sorted(by: { $0.key < $1.key }) where !(200..<300).contains(status) {
            rows.append(("status \(status)", F.grouped(count)))
        }
        for (reason, count) in errors.sorted(by: { $0.key < $1.key }) { rows.append(("error", "\(count) × \(reason)")) }
        rows.append(("result", isClean ? "clean" : "NOT CLEAN"))
        return F.table(title: "jetstream bench \(mode) → \(target)", rows: rows)
    }
}
