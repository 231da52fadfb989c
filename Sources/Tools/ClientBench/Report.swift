import Foundation
import JetstreamModel

/// Small timing helpers; figures are printed, never asserted.
enum Measure {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Nearest-rank percentile (`p` in 0…1) of unsorted samples; 0 for none.
    static func percentile(_ samples: [Double], _ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    static func mean(_ samples: [Double]) -> Double {
        samples.isEmpty ? 0 : samples.reduce(0, +) / Double(samples.count)
    }

    /// `digits` decimals.
    static func format(_ value: Double, _ digits: Int = 1) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// Thousands separated by a comma.
    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return value < 0 ? "-" + out : out
    }

    static func number(_ value: Double, _ digits: Int = 3) -> JSONValue {
        let scale = (0..<digits).reduce(1.0) { value, _ in value * 10 }
        return .number(JSONNumber(value.isFinite ? (value * scale).rounded() / scale : 0))
    }

    static func number(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
}

/// One in-process way of applying events.
struct ApplyRow {
    let key: String
    let summary: String
    let observers: Int
    let times: [Double]
    let expectedFires: Int
    let fires: Int

    var eventsPerSecond: Double { Measure.mean(times) > 0 ? 1e6 / Measure.mean(times) : 0 }

    var json: JSONValue {
        [
            "name": .string(key), "observers": Measure.number(observers), "events": Measure.number(times.count),
            "p50Micros": Measure.number(Measure.percentile(times, 0.5)),
            "p99Micros": Measure.number(Measure.percentile(times, 0.99)),
            "meanMicros": Measure.number(Measure.mean(times)), "eventsPerSecond": Measure.number(eventsPerSecond, 0),
            "expectedFires": Measure.number(expectedFires), "fires": Measure.number(fires),
        ]
    }
}

/// Everything the run measured, printed as Markdown tables or one JSON object (`--json`).
struct Report {
    var options: Options
    var serverNote = ""
    var objects = 0
    var seedSeconds = 0.0
    var stateBytes = 0
    var stateImportMs = 0.0
    var typedLoadMs = 0.0
    var fetchMs: [Double] = []
    var apply: [ApplyRow] = []
    var stream: StreamResult?
    var endToEnd: EndToEndResult?
    var actor: ActorResult?
    var offline: OfflineResult?
    var reconnects = 0
    var failures: [String] = []

    static let targetP99Ms = 20.0

    /// Turns missing or duplicate deliveries into failures (exit status 1).
    mutating func check() {
        if reconnects > 0 {
            failures.append("\(reconnects) stream reconnection(s): events were not all delivered live")
        }
        for row in apply where row.fires != row.expectedFires {
            failures.append("\(row.key): \(row.fires) observer fires, expected \(row.expectedFires)")
        }
        if let stream {
            if stream.missing > 0 || stream.duplicates > 0 || stream.unexpected > 0
                || stream.fires != stream.expectedFires
            {
                failures.append(
                    "stream: \(stream.fires) fires for \(stream.expectedFires) events on observed shapes "
                        + "(missing \(stream.missing), duplicate \(stream.duplicates), unexpected \(stream.unexpected))"
                )
            }
            if stream.stateMismatches > 0 {
                failures.append("stream: \(stream.stateMismatches) shapes differ from the server")
            }
            if !stream.versionReached && stream.failures.isEmpty { failures.append("stream: B's version is behind") }
            failures += stream.failures.map { "stream: \($0)" }
        }
        if let endToEnd,
            endToEnd.missing > 0 || endToEnd.duplicates > 0 || endToEnd.unknown > 0 || endToEnd.pendingAtEnd > 0
        {
            failures.append(
                "end to end: missing \(endToEnd.missing), duplicate \(endToEnd.duplicates), unknown \(endToEnd.unknown), "
                    + "A still pending \(endToEnd.pendingAtEnd)")
        }
        checkActor()
        checkOffline()
    }

    var json: String {
        var document: JSONObject = [
            "benchmark": "ClientBench", "server": .string(serverNote), "objects": Measure.number(objects),
            "observers": Measure.number(options.observers), "seedSeconds": Measure.number(seedSeconds),
            "load": [
                "stateBytes": Measure.number(stateBytes), "stateImportMs": Measure.number(stateImportMs),
                "typedLoadMs": Measure.number(typedLoadMs), "fetchMs": .array(fetchMs.map { Measure.number($0) }),
            ],
            "apply": .array(apply.map(\.json)), "reconnects": Measure.number(reconnects),
        ]
        if let stream {
            document["stream"] = [
                "events": Measure.number(stream.events), "postSeconds": Measure.number(stream.postSeconds),
                "postsPerSecond": Measure.number(
                    stream.postSeconds > 0 ? Double(stream.events) / stream.postSeconds : 0, 0),
                "blockedSeconds": Measure.number(stream.blockedSeconds),
                "queuedBeforeRelease": .bool(stream.queuedBeforeRelease),
                "drainSeconds": Measure.number(stream.drainSeconds, 4),
                "eventsPerSecond": Measure.number(stream.eventsPerSecond, 0),
                "expectedFires": Measure.number(stream.expectedFires), "fires": Measure.number(stream.fires),
                "missing": Measure.number(stream.missing), "duplicates": Measure.number(stream.duplicates),
                "unexpected": Measure.number(stream.unexpected),
                "stateMismatches": Measure.number(stream.stateMismatches),
                "versionReached": .bool(stream.versionReached),
            ]
        }
        if let endToEnd {
            let latencies = endToEnd.latencies
            let p99 = Measure.percentile(latencies, 0.99)
            document["endToEnd"] = [
                "sets": Measure.number(endToEnd.sets), "rate": Measure.number(endToEnd.rate),
                "seconds": Measure.number(endToEnd.seconds), "received": Measure.number(latencies.count),
                "missing": Measure.number(endToEnd.missing), "duplicates": Measure.number(endToEnd.duplicates),
                "unknown": Measure.number(endToEnd.unknown), "maxPending": Measure.number(endToEnd.maxPending),
                "pendingAtEnd": Measure.number(endToEnd.pendingAtEnd),
                "latestWriteMs": Measure.number(endToEnd.latestWriteMs),
                "latencyMs": [
                    "count": Measure.number(latencies.count), "min": Measure.number(latencies.min() ?? 0),
                    "p50": Measure.number(Measure.percentile(latencies, 0.5)),
                    "p90": Measure.number(Measure.percentile(latencies, 0.9)), "p99": Measure.number(p99),
                    "max": Measure.number(latencies.max() ?? 0),
                ],
                // Per set, in the order A wrote them (-1: never seen by B).
                "perSetMs": .array(
                    (0..<endToEnd.sets).map { index in endToEnd.bySet[index].map { Measure.number($0) } ?? -1 }),
                "targetP99Ms": Measure.number(Self.targetP99Ms),
                "targetMet": .bool(!latencies.isEmpty && endToEnd.missing == 0 && p99 <= Self.targetP99Ms),
            ]
        }
        if let actor { document["actor"] = actorJSON(actor) }
        if let offline { document["offline"] = offlineJSON(offline) }
        document["failures"] = .array(failures.map { .string($0) })
        return String(decoding: JSONValue.object(document).encoded(), as: UTF8.self)
    }

    var markdown: String {
        guard objects > 0 else {
            return
                (["# ClientBench: the Swift client against `jetstream serve`", "", "Failures:"]
                + failures.map { "- \($0)" }).joined(separator: "\n")
        }
        var lines = [
            "# ClientBench: the Swift client against `jetstream serve`", "",
            "Server: \(serverNote). Scope: a Canvas with \(Measure.grouped(objects - 1)) Shapes "
                + "(\(Measure.grouped(objects)) objects), seeded in \(Measure.format(seedSeconds, 2)) s; "
                + "\(options.observers) observers (`observeChange(keys: [\"x\"])` on \(options.observers) shapes).", "",
            "| load | time |", "|---|---:|",
            "| GET state (\(Measure.format(Double(stateBytes) / 1e6, 2)) MB) → `ScopeState` (parse, decode, import) "
                + "| \(Measure.format(stateImportMs)) ms |",
            "| `applyFullState`: \(Measure.grouped(objects)) typed objects | \(Measure.format(typedLoadMs)) ms |",
        ]
        if !fetchMs.isEmpty {
            lines.append(
                "| `Client.fetch` (schema, GET, typed load), per client | "
                    + fetchMs.map { "\(Measure.format($0)) ms" }.joined(separator: ", ") + " |")
        }
        if !apply.isEmpty || stream != nil {
            lines += [
                "",
                "| remote apply, one `change` of `x` per event | observers | events | p50 µs | p99 µs | events/s | observer fires (expected) |",
                "|---|---:|---:|---:|---:|---:|---|",
            ]
            for row in apply {
                lines.append(
                    "| \(row.summary) | \(row.observers) | \(Measure.grouped(row.times.count)) | "
                        + "\(Measure.format(Measure.percentile(row.times, 0.5))) | "
                        + "\(Measure.format(Measure.percentile(row.times, 0.99))) | "
                        + "**\(Measure.grouped(Int(row.eventsPerSecond.rounded())))** | \(row.fires) (\(row.expectedFires)) |"
                )
            }
            if let stream {
                lines.append(
                    "| over the stream: \(Measure.grouped(stream.events)) events queued in B's transport, drained "
                        + "(\(Measure.format(stream.drainSeconds * 1e3)) ms) | \(options.observers) | "
                        + "\(Measure.grouped(stream.events)) | – | – | **\(Measure.grouped(Int(stream.eventsPerSecond.rounded())))** | "
                        + "\(stream.fires) (\(stream.expectedFires)); missing \(stream.missing), duplicate \(stream.duplicates) |"
                )
                lines += [
                    "",
                    "Writer for the stream part: \(Measure.grouped(stream.events)) POSTs, \(options.writers) in flight, "
                        + "\(Measure.format(stream.postSeconds, 2)) s (\(Measure.grouped(Int((Double(stream.events) / max(stream.postSeconds, 1e-9)).rounded()))) "
                        + "change sets/s); B held \(Measure.format(stream.blockedSeconds, 2)) s"
                        + (stream.queuedBeforeRelease
                            ? "." : " (released before the writer finished: the drain includes live arrival)."),
                ]
            }
        }
        if let endToEnd {
            let latencies = endToEnd.latencies
            let p99 = Measure.percentile(latencies, 0.99)
            let met = !latencies.isEmpty && endToEnd.missing == 0 && p99 <= Self.targetP99Ms
            lines += [
                "",
                "| end to end: A's local change → B's observer | sets | p50 | p90 | p99 | max | missing / duplicate | p99 ≤ \(Int(Self.targetP99Ms)) ms |",
                "|---|---:|---:|---:|---:|---:|---|---|",
                "| \(Measure.format(endToEnd.rate, 0))/s for \(Measure.format(endToEnd.seconds, 0)) s, one shape's `x` | "
                    + "\(endToEnd.sets) | \(Measure.format(Measure.percentile(latencies, 0.5), 2)) ms | "
                    + "\(Measure.format(Measure.percentile(latencies, 0.9), 2)) ms | **\(Measure.format(p99, 2)) ms** | "
                    + "\(Measure.format(latencies.max() ?? 0, 2)) ms | \(endToEnd.missing) / \(endToEnd.duplicates) | "
                    + (met ? "met" : "missed") + " |",
                "",
                "A's pending sets at most \(endToEnd.maxPending) at a write; latest write \(Measure.format(endToEnd.latestWriteMs, 2)) ms after its slot.",
            ]
        }
        if let actor { lines += actorMarkdown(actor) }
        if let offline { lines += offlineMarkdown(offline) }
        if !failures.isEmpty {
            lines += ["", "Failures:"] + failures.map { "- \($0)" }
        }
        return lines.joined(separator: "\n")
    }
}
