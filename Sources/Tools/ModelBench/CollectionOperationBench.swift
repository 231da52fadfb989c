import BenchSupport
import Foundation
import JetstreamModel

/// Collection operations against whole arrays on one long `[Shape]` collection: a group of N shapes
/// gets one new shape in its middle and loses it again, sent either as operations objects or as
/// the whole array, through the public path the server takes for a POST body (parse, read the
/// fragments, validate and apply), and then the changeset event it encodes.
///
/// ```sh
/// swift run -c release ModelBench --only ops
/// ```
enum CollectionOperationBench {
    struct Row {
        let elements: Int
        let edit: String
        let body: String
        let bodyBytes: Int
        let parseApplyP50: Double
        let parseApplyP99: Double
        let encodeP50: Double

        var jsonValue: JSONValue {
            [
                "elements": .number(JSONNumber(elements)), "edit": .string(edit), "body": .string(body),
                "bodyBytes": .number(JSONNumber(bodyBytes)),
                "parseApplyP50Micros": .number(JSONNumber(Double(Measure.format(parseApplyP50))!)),
                "parseApplyP99Micros": .number(JSONNumber(Double(Measure.format(parseApplyP99))!)),
                "encodeEventP50Micros": .number(JSONNumber(Double(Measure.format(encodeP50))!)),
            ]
        }
    }

    /// Room for the long collection plus the inserted shape.
    static let limits = Limits(
        maxObjectsPerScope: 2_000_000, maxFragmentsPerSet: 200_000, maxStringLength: 65_536,
        maxCollectionLength: 200_000)

    /// Measures insert and remove, as operations and as whole arrays, on a collection of `elements`
    /// shapes; `rounds` of each.
    static func run(elements: Int, rounds: Int) -> [Row] {
        var random = SplitMix(seed: 7)
        let schema = BenchScope.schema
        var state = ScopeState(rootUUID: random.uuid(), rootClass: schema.modelClass(named: "Canvas")!)
        let (layer, group) = (random.uuid(), random.uuid())
        let shapes = (0..<elements).map { _ in random.uuid() }
        var build = shapes.map { SyncFragment(type: .add, uuid: $0, clsName: "Shape") }
        build.append(
            SyncFragment(
                type: .add, uuid: group, clsName: "Group", properties: ["shapes": .array(shapes.map(wire))]))
        build.append(
            SyncFragment(type: .add, uuid: layer, clsName: "Layer", properties: ["groups": [wire(group)]]))
        build.append(
            SyncFragment(type: .change, uuid: state.rootUUID, clsName: "Canvas", properties: ["layers": [wire(layer)]]))
        guard let built = state.applying(build, schema: schema, limits: limits).applied else {
            fatalError("bench collection rejected")
        }
        state = built.state

        // The same shape goes in and out each round (it leaves the scope when removed), so the four
        // bodies are encoded once.
        let added = random.uuid()
        let anchor = shapes[elements / 2]
        let add = SyncFragment(type: .add, uuid: added, clsName: "Shape")
        func change(_ value: JSONValue) -> SyncFragment {
            SyncFragment(type: .change, uuid: group, clsName: "Group", properties: ["shapes": value])
        }
        var withAdded = shapes
        withAdded.insert(added, at: elements / 2)
        let bodies: [(edit: String, body: String, fragments: [SyncFragment])] = [
            ("insert", "operations", [add, change(["insert": [wire(added)], "before": wire(anchor)])]),
            ("remove", "operations", [change(["remove": [wire(added)]])]),
            ("insert", "whole array", [add, change(.array(withAdded.map(wire)))]),
            ("remove", "whole array", [change(.array(shapes.map(wire)))]),
        ]
        let encoded = bodies.map { JSONValue.object(["fragments": .array($0.fragments.map(\.jsonValue))]).encoded() }

        var parseApply = [[Double]](repeating: [], count: bodies.count)
        var encode = [[Double]](repeating: [], count: bodies.count)
        let warmUp = max(2, rounds / 10)
        for round in 0..<(warmUp + rounds) {
            for (index, body) in encoded.enumerated() {
                var outcome: ChangeSetOutcome?
                let times = Measure.samples(1) {
                    let json = try! JSONParser.parse(body)
                    outcome = state.applying(ChangeSet(json: json["fragments"]!.array!), schema: schema, limits: limits)
                }
                guard let applied = outcome?.applied,
                    applied.removed.count == (bodies[index].edit == "remove" ? 1 : 0)
                else { fatalError("\(bodies[index]) rejected: \(outcome?.replies ?? [])") }
                var writer = JSONWriter(capacity: 64 << 10)
                let encodeTimes = Measure.samples(1) { applied.writeEvent(to: &writer) }
                state = applied.state
                if round >= warmUp {
                    parseApply[index] += times
                    encode[index] += encodeTimes
                }
            }
        }
        let count = state.object(group)?["shapes"]?.referencedUUIDs.count
        precondition(count == elements, "the collection did not come back to \(elements) elements")
        return bodies.indices.map { index in
            Row(
                elements: elements, edit: bodies[index].edit, body: bodies[index].body,
                bodyBytes: encoded[index].count,
                parseApplyP50: Measure.percentile(parseApply[index], 0.5),
                parseApplyP99: Measure.percentile(parseApply[index], 0.99),
                encodeP50: Measure.percentile(encode[index], 0.5))
        }
    }

    private static func wire(_ uuid: UUID) -> JSONValue { .string(uuid.wireString) }
}
