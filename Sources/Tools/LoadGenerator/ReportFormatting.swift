import Histogram
import JetstreamJSON

/// Shared pieces of the text table and the `--json` object.
enum ReportFormatting {
    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return value < 0 ? "-" + out : out
    }

    static func fixed(_ value: Double, _ places: Int = 2) -> String {
        guard value.isFinite else { return "-" }
        if places == 0 { return String(Int(value.rounded())) }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = String(rounded)
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if decimals < places { text += String(repeating: "0", count: places - decimals) }
        } else if places > 0 {
            text += "." + String(repeating: "0", count: places)
        }
        return text
    }

    static func number(_ value: Double, places: Int = 3) -> JSONValue {
        guard value.isFinite else { return .null }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return .number(JSONNumber((value * scale).rounded() / scale))
    }

    static func integer(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }

    static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        .object(JSONObject(members.map { JSONObject.Member(key: $0.0, value: $0.1) }))
    }

    static func latency(_ summary: LatencySummary) -> JSONValue {
        object(summary.report.map { ($0.key, number($0.milliseconds)) })
    }

    static func latencyLine(_ summary: LatencySummary) -> String {
        let parts = summary.report.map { "\($0.key == "p999" ? "p99.9" : $0.key) \(fixed($0.milliseconds, 2))" }
        return parts.joined(separator: "  ")
    }

    static func counts(_ counts: [String: Int]) -> JSONValue {
        object(counts.sorted { $0.key < $1.key }.map { ($0.key, integer($0.value)) })
    }

    /// Label/value rows with the labels padded to one width.
    static func table(title: String, rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        var out = title + "\n"
        for (label, value) in rows {
            out += "  " + label + String(repeating: " ", count: width - label.count) + "  " + value + "\n"
        }
        return out
    }
}

/// Percentiles of one latency distribution, recorded in microseconds in an HdrHistogram
/// (3 significant digits) and reported in milliseconds.
public struct LatencySummary: Sendable {
    private var histogram = Histogram<UInt64>(
        highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)

    public init() {}

    public var count: UInt64 { histogram.totalCount }

    public mutating func record(nanoseconds: UInt64) {
        _ = histogram.record(max(1, nanoseconds / 1000))
    }

    public mutating func merge(_ other: LatencySummary) {
        histogram.add(other.histogram)
    }

    /// The value at `percentile` (0–100) in milliseconds.
    public func milliseconds(atPercentile percentile: Double) -> Double {
        count == 0 ? 0 : Double(histogram.valueAtPercentile(percentile)) / 1000
    }

    public var maxMilliseconds: Double { count == 0 ? 0 : Double(histogram.max) / 1000 }
    public var meanMilliseconds: Double { count == 0 ? 0 : histogram.mean / 1000 }

    /// p50, p90, p99, p99.9, max and mean, the keys the JSON report uses.
    public var report: [(key: String, milliseconds: Double)] {
        [
            ("p50", milliseconds(atPercentile: 50)), ("p90", milliseconds(atPercentile: 90)),
            ("p99", milliseconds(atPercentile: 99)), ("p999", milliseconds(atPercentile: 99.9)),
            ("max", maxMilliseconds), ("mean", meanMilliseconds),
        ]
    }
}
