import BenchSupport
import Foundation
import JetstreamModel

/// The cost of the schema's write rules on the apply path: the typical 10-fragment change set
/// applied under the bench schema (no rules: nothing is checked) and under the same classes with
/// `write: owner, delete: owner` on every class below the root and an immutable property, written
/// by the owner, so every check runs and passes (the set's five moves, its group edit and its
/// three removals are all judged).
enum RulesBench {
    struct Row {
        let schema: String
        let objects: Int
        let p50: Double
        let p99: Double
        let mean: Double

        var jsonValue: JSONValue {
            [
                "schema": .string(schema), "objects": .number(JSONNumber(objects)),
                "p50Micros": .number(JSONNumber(Double(Measure.format(p50, 3))!)),
                "p99Micros": .number(JSONNumber(Double(Measure.format(p99, 3))!)),
                "meanMicros": .number(JSONNumber(Double(Measure.format(mean, 3))!)),
            ]
        }
    }

    /// Both schemas at `objects`, interleaved round by round so drift hits both alike.
    static func run(objects: Int, sets: Int) -> [Row] {
        var plain = BenchScope(objects: objects)
        var ruled = BenchScope(
            objects: objects, schema: BenchScope.rulesSchema, author: ChangeAuthor(subject: "bench-owner"))
        var plainTimes: [Double] = []
        var ruledTimes: [Double] = []
        for round in 0..<(sets + 50) {
            // Which goes first alternates: the second of a pair runs on warmer caches.
            for index in round % 2 == 0 ? [0, 1] : [1, 0] {
                var scope = index == 0 ? plain : ruled
                let fragments = scope.typicalChangeSet()
                var outcome: ChangeSetOutcome?
                let time = Measure.samples(1) {
                    outcome = scope.state.applying(
                        fragments, schema: scope.schema, limits: BenchScope.limits, author: scope.author)
                }[0]
                guard let applied = outcome?.applied, applied.removed.count == 3 else {
                    fatalError("rules bench set rejected: \(outcome?.replies ?? [])")
                }
                scope.state = applied.state
                if round >= 50 { index == 0 ? plainTimes.append(time) : ruledTimes.append(time) }
                if index == 0 { plain = scope } else { ruled = scope }
            }
        }
        return [("no rules", plainTimes), ("owner rules, checked", ruledTimes)].map { name, times in
            Row(
                schema: name, objects: plain.state.count, p50: Measure.percentile(times, 0.5),
                p99: Measure.percentile(times, 0.99), mean: times.reduce(0, +) / Double(times.count))
        }
    }
}
