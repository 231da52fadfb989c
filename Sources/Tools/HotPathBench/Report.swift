import JetstreamModel

/// Prints results as a Markdown table (default) or as one JSON object (`--json`).
enum Report {
    static func markdown(_ results: [MicroResult], quick: Bool, scopeObjects: Int) -> String {
        var lines = [
            "# HotPathBench\(quick ? " (quick: few samples, smaller scope)" : "")", "",
            "Per operation; p50/p99 over samples of `batch` consecutive operations (batch 1 = each timed alone).",
            "Scope: \(grouped(scopeObjects)) objects. MB = 10^6 bytes.", "",
            "| operation | key | bytes/op | p50 µs | p99 µs | mean µs | ops/s | items/s | MB/s | batch × samples |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for result in results {
            let benchmark = result.benchmark
            let cells = [
                benchmark.summary, "`\(benchmark.name)`", benchmark.bytesPerOp > 0 ? grouped(benchmark.bytesPerOp) : "",
                micros(result.p50Micros), micros(result.p99Micros), micros(result.meanMicros),
                grouped(Int(result.opsPerSecond.rounded())),
                benchmark.itemsPerOp > 1 ? grouped(Int(result.itemsPerSecond.rounded())) : "",
                result.megabytesPerSecond.map { String(format1($0)) } ?? "",
                "\(result.batch) × \(grouped(result.samples))",
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ results: [MicroResult], quick: Bool, scopeObjects: Int) -> String {
        let operations: [JSONValue] = results.map { result in
            var object: JSONObject = [
                "name": .string(result.benchmark.name),
                "summary": .string(result.benchmark.summary),
                "samples": .number(JSONNumber(result.samples)),
                "batch": .number(JSONNumber(result.batch)),
                "operations": .number(JSONNumber(result.operations)),
                "bytesPerOp": .number(JSONNumber(result.benchmark.bytesPerOp)),
                "itemsPerOp": .number(JSONNumber(result.benchmark.itemsPerOp)),
                "p50Micros": number(result.p50Micros),
                "p99Micros": number(result.p99Micros),
                "meanMicros": number(result.meanMicros),
                "opsPerSecond": number(result.opsPerSecond),
                "itemsPerSecond": number(result.itemsPerSecond),
            ]
            if let rate = result.megabytesPerSecond { object["megabytesPerSecond"] = number(rate) }
            return .object(object)
        }
        let document: JSONValue = [
            "benchmark": "HotPathBench",
            "quick": .bool(quick),
            "scopeObjects": .number(JSONNumber(scopeObjects)),
            "operations": .array(operations),
        ]
        return String(decoding: document.encoded(), as: UTF8.self)
    }

    /// Three decimals, finite (the JSON writer accepts no infinity).
    private static func number(_ value: Double) -> JSONValue {
        .number(JSONNumber(value.isFinite ? (value * 1_000).rounded() / 1_000 : 0))
    }

    private static func micros(_ value: Double) -> String {
        value < 10 ? String(format3(value)) : value < 100 ? String(format2(value)) : String(format1(value))
    }

    private static func format1(_ value: Double) -> Double { (value * 10).rounded() / 10 }
    private static func format2(_ value: Double) -> Double { (value * 100).rounded() / 100 }
    private static func format3(_ value: Double) -> Double { (value * 1_000).rounded() / 1_000 }

    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return value < 0 ? "-" + result : result
    }
}
