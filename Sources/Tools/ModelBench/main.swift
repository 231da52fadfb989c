import BenchSupport
import Foundation
import JetstreamModel

// Model-core benchmark. Run: swift run -c release ModelBench [--quick] [--json]
// --quick uses smaller scopes (for a smoke run in debug builds); --only apply|ops|state|json runs one
// section (for profiling); --json prints one JSON object on stdout instead of the Markdown tables
// (apply p50/p99/mean per scope size, collection operations against whole arrays, the state steps,
// the JSON coder rates).

let quick = CommandLine.arguments.contains("--quick")
let asJSON = CommandLine.arguments.contains("--json")
/// Markdown output; silent with `--json`, whose object is printed at the end.
func say(_ line: String) { if !asJSON { print(line) } }
var applyRows: [JSONValue] = []
var stateSteps = JSONObject()
var coderRows: [JSONValue] = []
var operationRows: [JSONValue] = []
var rulesRows: [JSONValue] = []
func jsonNumber(_ value: Double, _ digits: Int = 3) -> JSONValue {
    .number(JSONNumber(Double(Measure.format(value, digits))!))
}
@MainActor func printJSON() {
    var document: JSONObject = ["benchmark": "ModelBench", "quick": .bool(quick), "apply": .array(applyRows)]
    if !operationRows.isEmpty { document["ops"] = .array(operationRows) }
    if !rulesRows.isEmpty { document["rules"] = .array(rulesRows) }
    if !stateSteps.isEmpty { document["state"] = .object(stateSteps) }
    if !coderRows.isEmpty { document["json"] = .array(coderRows) }
    print(String(decoding: JSONValue.object(document).encoded(), as: UTF8.self))
}
let only = CommandLine.arguments.firstIndex(of: "--only").map { CommandLine.arguments[$0 + 1] }
func runs(_ section: String) -> Bool { only == nil || only == section }
let sizes = quick ? [1_000, 10_000] : [10_000, 100_000, 1_000_000]
let setsPerSize = quick ? 200 : 2_000
let stateSize = quick ? 10_000 : 100_000

say("# ModelBench\(quick ? " (quick)" : "")\n")
say("## validate + apply of a 10-fragment change set (3 add, 3 removed, 7 change), a snapshot held\n")
let applyWidths = [10, 12, 14, 12, 12, 12, 16]
say(
    Measure.row(
        ["objects", "build (s)", "build obj/s", "apply p50 µs", "apply p99 µs", "apply mean", "parse+apply p50"],
        widths: applyWidths))
var stateForExport: ScopeState?
for size in sizes where runs("apply") || size == stateSize {
    var scope = BenchScope(objects: 10)
    let buildSeconds = Measure.time { scope = BenchScope(objects: size) }
    let objectCount = scope.state.count
    var snapshot = scope.state
    // Warm up, then measure apply alone (fragments prepared outside the timed region).
    for _ in 0..<50 {
        let fragments = scope.typicalChangeSet()
        let outcome = scope.state.applying(fragments, schema: BenchScope.schema, limits: BenchScope.limits)
        guard let applied = outcome.applied else { fatalError("warm-up set rejected: \(outcome.replies)") }
        scope.state = applied.state
    }
    var applyTimes: [Double] = []
    var parseApplyTimes: [Double] = []
    for iteration in 0..<setsPerSize {
        let fragments = scope.typicalChangeSet()
        let body = JSONValue.object(["fragments": .array(fragments.map(\.jsonValue))]).encoded()
        snapshot = scope.state  // a reader holds the current version while the writer builds the next
        var outcome: ChangeSetOutcome?
        if iteration % 2 == 0 {
            applyTimes.append(
                contentsOf: Measure.samples(1) {
                    outcome = scope.state.applying(fragments, schema: BenchScope.schema, limits: BenchScope.limits)
                })
        } else {
            parseApplyTimes.append(
                contentsOf: Measure.samples(1) {
                    let json = try! JSONParser.parse(body)
                    outcome = scope.state.applying(
                        ChangeSet(json: json["fragments"]!.array!), schema: BenchScope.schema, limits: BenchScope.limits
                    )
                })
        }
        guard let applied = outcome?.applied, applied.removed.count == 3 else {
            fatalError("bench change set rejected: \(outcome?.replies ?? [])")
        }
        scope.state = applied.state
    }
    precondition(snapshot.version + 1 == scope.state.version)
    applyRows.append(
        [
            "objects": .number(JSONNumber(objectCount)), "sets": .number(JSONNumber(applyTimes.count)),
            "buildSeconds": jsonNumber(buildSeconds),
            "buildObjectsPerSecond": jsonNumber(Double(objectCount) / buildSeconds, 0),
            "p50Micros": jsonNumber(Measure.percentile(applyTimes, 0.5)),
            "p99Micros": jsonNumber(Measure.percentile(applyTimes, 0.99)),
            "meanMicros": jsonNumber(applyTimes.reduce(0, +) / Double(applyTimes.count)),
            "parseApplyP50Micros": jsonNumber(Measure.percentile(parseApplyTimes, 0.5)),
        ])
    say(
        Measure.row(
            [
                "\(objectCount)", Measure.format(buildSeconds, 2),
                Measure.format(Double(objectCount) / buildSeconds, 0),
                Measure.format(Measure.percentile(applyTimes, 0.5)),
                Measure.format(Measure.percentile(applyTimes, 0.99)),
                Measure.format(applyTimes.reduce(0, +) / Double(applyTimes.count)),
                Measure.format(Measure.percentile(parseApplyTimes, 0.5)),
            ], widths: applyWidths))
    if objectCount >= stateSize / 2 && objectCount <= stateSize * 2 { stateForExport = scope.state }
}

if runs("ops") {
    say("\n## one insert / remove in the middle of a long [Shape] collection: operations vs the whole array\n")
    let widths = [9, 7, 12, 11, 19, 19, 19]
    say(
        Measure.row(
            [
                "elements", "edit", "sent as", "body bytes", "parse+apply p50 µs", "parse+apply p99 µs",
                "encode event p50",
            ],
            widths: widths))
    for elements in quick ? [1_000, 10_000] : [10_000, 100_000] {
        let rounds = quick ? 20 : elements >= 100_000 ? 200 : 1_000
        for row in CollectionOperationBench.run(elements: elements, rounds: rounds) {
            operationRows.append(row.jsonValue)
            say(
                Measure.row(
                    [
                        "\(row.elements)", row.edit, row.body, "\(row.bodyBytes)", Measure.format(row.parseApplyP50),
                        Measure.format(row.parseApplyP99), Measure.format(row.encodeP50),
                    ], widths: widths))
        }
    }
}

if runs("rules") {
    say("\n## the write rules' cost: the same set under no rules and under owner rules, written by the owner\n")
    let widths = [24, 10, 14, 14, 12]
    say(Measure.row(["schema", "objects", "apply p50 µs", "apply p99 µs", "mean µs"], widths: widths))
    for objects in quick ? [1_000] : [10_000, 100_000] {
        for row in RulesBench.run(objects: objects, sets: setsPerSize) {
            rulesRows.append(row.jsonValue)
            say(
                Measure.row(
                    [
                        row.schema, "\(row.objects)", Measure.format(row.p50), Measure.format(row.p99),
                        Measure.format(row.mean),
                    ], widths: widths))
        }
    }
}

guard let state = stateForExport else { fatalError("no scope of about \(stateSize) objects") }
var exported: [SyncFragment] = []
var stateBytes: [UInt8] = []
let exportSeconds = Measure.time { exported = state.exportFragments() }
let encodeSeconds = Measure.time {
    var writer = JSONWriter(capacity: 32 << 20)
    writer.writeRaw(#"{"name":"bench-1","version":"#)
    writer.writeRaw(String(state.version))
    writer.writeRaw(#","rootUUID":""#)
    writer.writeRaw(state.rootUUID.wireString)
    writer.writeRaw(#"","fragments":["#)
    for (index, fragment) in exported.enumerated() {
        if index > 0 { writer.writeRaw(",") }
        fragment.write(to: &writer)
    }
    writer.writeRaw("]}")
    stateBytes = writer.bytes
}
var parsed: JSONValue = .null
let parseSeconds = Measure.time { parsed = try! JSONParser.parse(stateBytes) }
var decoded: [SyncFragment] = []
let decodeSeconds = Measure.time { decoded = parsed["fragments"]!.array!.map { try! SyncFragment(json: $0) } }
let mb = Double(stateBytes.count) / 1e6
if runs("state") {
    var imported: ScopeState?
    let importSeconds = Measure.time {
        imported = try! ScopeState(
            importing: decoded, rootUUID: state.rootUUID, version: state.version, schema: BenchScope.schema)
    }
    precondition(imported == state, "import did not reproduce the state")
    say("\n## full state of \(state.count) objects\n")
    say("step | seconds | note")
    say("export fragments (pre-order) | \(Measure.format(exportSeconds, 3)) |")
    say("encode to JSON (JSONWriter) | \(Measure.format(encodeSeconds, 3)) | \(Measure.format(mb)) MB")
    say("parse JSON (JSONParser) | \(Measure.format(parseSeconds, 3)) |")
    say("decode fragments | \(Measure.format(decodeSeconds, 3)) |")
    say("import (validate + build) | \(Measure.format(importSeconds, 3)) |")
    say("export total (export + encode) | \(Measure.format(exportSeconds + encodeSeconds, 3)) |")
    var streamed = JSONWriter(capacity: 32 << 20)
    let streamSeconds = Measure.time { state.writeState(name: "bench-1", to: &streamed) }
    precondition(streamed.bytes.count == stateBytes.count)
    stateSteps = [
        "objects": .number(JSONNumber(state.count)), "megabytes": jsonNumber(mb),
        "exportSeconds": jsonNumber(exportSeconds), "encodeSeconds": jsonNumber(encodeSeconds),
        "streamSeconds": jsonNumber(streamSeconds), "parseSeconds": jsonNumber(parseSeconds),
        "decodeSeconds": jsonNumber(decodeSeconds), "importSeconds": jsonNumber(importSeconds),
    ]
    say("GET body streamed (writeState: walk + write) | \(Measure.format(streamSeconds, 3)) |")
    say(
        "import total (parse + decode + import) | \(Measure.format(parseSeconds + decodeSeconds + importSeconds, 3)) |")
}
guard runs("json") else {
    if asJSON { printJSON() }
    exit(0)
}

say("\n## JSON throughput (MB/s; higher is better)\n")
// Two corpora: the full state document above, and a typical 10-fragment POST body.
var bodyScope = BenchScope(objects: 2_000)
let body = JSONValue.object(["fragments": .array(bodyScope.typicalChangeSet().map(\.jsonValue))]).encoded()
let bodyRepeats = quick ? 2_000 : 20_000
let stateRepeats = quick ? 1 : 3

func throughput(bytes: Int, repeats: Int, _ body: () throws -> Void) rethrows -> Double {
    let seconds = try Measure.time { for _ in 0..<repeats { try body() } }
    return Double(bytes * repeats) / seconds / 1e6
}

let stateData = Data(stateBytes)
let bodyData = Data(body)
let foundationState = try! JSONSerialization.jsonObject(with: stateData)
let foundationBody = try! JSONSerialization.jsonObject(with: bodyData)
let codableState = try! JSONDecoder().decode(CodableState.self, from: stateData)
let codableBody = try! JSONDecoder().decode([String: [CodableFragment]].self, from: bodyData)
let parsedBody = try! JSONParser.parse(body)

var results: [(String, Double, Double)] = []
results.append(
    (
        "JSONParser.parse (ours, bytes → JSONValue)",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) { _ = try JSONParser.parse(stateBytes) },
        try! throughput(bytes: body.count, repeats: bodyRepeats) { _ = try JSONParser.parse(body) }
    ))
results.append(
    (
        "JSONParser + SyncFragment(json:)",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) {
            _ = try JSONParser.parse(stateBytes)["fragments"]!.array!.map { try SyncFragment(json: $0) }
        },
        try! throughput(bytes: body.count, repeats: bodyRepeats) {
            _ = ChangeSet(json: try JSONParser.parse(body)["fragments"]!.array!)
        }
    ))
results.append(
    (
        "JSONSerialization.jsonObject",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) {
            _ = try JSONSerialization.jsonObject(with: stateData)
        },
        try! throughput(bytes: body.count, repeats: bodyRepeats) {
            _ = try JSONSerialization.jsonObject(with: bodyData)
        }
    ))
results.append(
    (
        "JSONDecoder → Codable fragments",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) {
            _ = try JSONDecoder().decode(CodableState.self, from: stateData)
        },
        try! throughput(bytes: body.count, repeats: bodyRepeats) {
            _ = try JSONDecoder().decode([String: [CodableFragment]].self, from: bodyData)
        }
    ))
results.append(
    (
        "JSONWriter (ours, JSONValue → bytes)",
        throughput(bytes: stateBytes.count, repeats: stateRepeats) { _ = parsed.encoded() },
        throughput(bytes: body.count, repeats: bodyRepeats) { _ = parsedBody.encoded() }
    ))
results.append(
    (
        "JSONSerialization.data",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) {
            _ = try JSONSerialization.data(withJSONObject: foundationState)
        },
        try! throughput(bytes: body.count, repeats: bodyRepeats) {
            _ = try JSONSerialization.data(withJSONObject: foundationBody)
        }
    ))
results.append(
    (
        "JSONEncoder ← Codable fragments",
        try! throughput(bytes: stateBytes.count, repeats: stateRepeats) { _ = try JSONEncoder().encode(codableState) },
        try! throughput(bytes: body.count, repeats: bodyRepeats) { _ = try JSONEncoder().encode(codableBody) }
    ))
let jsonWidths = [42, 22, 22]
say(Measure.row(["coder", "state \(Measure.format(mb)) MB", "body \(body.count) B"], widths: jsonWidths))
for (name, stateRate, bodyRate) in results {
    say(Measure.row([name, Measure.format(stateRate), Measure.format(bodyRate)], widths: jsonWidths))
    coderRows.append(
        [
            "coder": .string(name), "stateMegabytesPerSecond": jsonNumber(stateRate, 1),
            "bodyMegabytesPerSecond": jsonNumber(bodyRate, 1),
        ])
}
if asJSON { printJSON() }
