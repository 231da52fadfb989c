import BenchSupport
import Foundation
import JetstreamModel

/// The model side of a change-set POST: decode the JSON body into fragments, validate and apply
/// them to the scope's state. Two shapes: ModelBench's 10-fragment set (3 add, 3 leave, 7
/// change) and the 1-fragment `change` of the root Canvas's `name` that the fan-out and write
/// benchmarks post.
final class ModelWorkloads {
    /// A 10,001-object scope; a reader holds the previous version, as in ModelBench.
    private var scope: BenchScope
    private var snapshot: ScopeState
    private var pending: [SyncFragment] = []
    private var pendingBody: [UInt8] = []
    private var outcome: ChangeSetOutcome?
    private var nameCounter = 0
    /// The 10-fragment body (≈ 5 KB) and the 1-fragment body.
    let tenFragmentBody: [UInt8]
    let oneFragmentBody: [UInt8]
    /// One accepted set of each shape, for the SSE encoders.
    let tenFragmentApplied: AppliedChangeSet
    let oneFragmentApplied: AppliedChangeSet

    init(objects: Int) {
        scope = BenchScope(objects: objects)
        snapshot = scope.state
        let ten = scope.typicalChangeSet()
        tenFragmentBody = Self.body(ten)
        let one = [Self.rename(scope.state.rootUUID, to: "t1732190000123456789")]
        oneFragmentBody = Self.body(one)
        guard let tenApplied = scope.state.applying(ten, schema: BenchScope.schema, limits: BenchScope.limits).applied,
            let oneApplied = tenApplied.state.applying(one, schema: BenchScope.schema, limits: BenchScope.limits)
                .applied
        else { fatalError("the sample change sets were rejected") }
        tenFragmentApplied = tenApplied
        oneFragmentApplied = oneApplied
        scope.state = oneApplied.state
        // The decoders must produce what the applier accepts.
        precondition(Self.decode(tenFragmentBody).entries.allSatisfy { (try? $0.get()) != nil })
        precondition(Self.decode(oneFragmentBody).count == 1)
    }

    static func body(_ fragments: [SyncFragment]) -> [UInt8] {
        JSONValue.object(["fragments": .array(fragments.map(\.jsonValue))]).encoded()
    }

    static func rename(_ root: UUID, to name: String) -> SyncFragment {
        SyncFragment(type: .change, uuid: root, clsName: "Canvas", properties: ["name": .string(name)])
    }

    /// Bytes → `JSONValue` → `{"fragments":[…]}` → ``ChangeSet`` (each fragment decoded), as the
    /// gateway's POST route does.
    static func decode(_ body: [UInt8]) -> ChangeSet {
        guard let json = try? JSONParser.parse(body), let fragments = json["fragments"]?.array else {
            fatalError("bench body did not parse")
        }
        return ChangeSet(json: fragments)
    }

    /// Moves the scope to the last accepted state (untimed) and lets a reader hold it.
    private func commitPrevious() {
        if let outcome {
            guard let applied = outcome.applied else { fatalError("bench change set rejected: \(outcome.replies)") }
            scope.state = applied.state
            self.outcome = nil
        }
        snapshot = scope.state
    }

    private func nextName() -> String {
        nameCounter += 1
        return "t\(1_732_190_000_000_000_000 + nameCounter)"
    }

    /// Objects in the scope the sets are applied to.
    var scopeObjects: Int { snapshot.count }

    func benchmarks() -> [MicroBenchmark] {
        let ten = tenFragmentBody
        let one = oneFragmentBody
        let objects = Report.grouped(scope.state.count)
        return [
            MicroBenchmark(
                "fragments.decode.10", "decode body → 10 fragments (JSONParser + SyncFragment)", bytesPerOp: ten.count,
                itemsPerOp: 10
            ) {
                blackHole(Self.decode(ten))
            },
            MicroBenchmark(
                "fragments.decode.1", "decode body → 1 fragment (fan-out POST shape)", bytesPerOp: one.count
            ) {
                blackHole(Self.decode(one))
            },
            MicroBenchmark(
                "changeset.apply.10", "validate + apply 10 fragments, \(objects)-object scope", bytesPerOp: 0,
                itemsPerOp: 10,
                setUp: { [unowned self] in
                    commitPrevious()
                    pending = scope.typicalChangeSet()
                },
                operation: { [unowned self] in
                    outcome = scope.state.applying(pending, schema: BenchScope.schema, limits: BenchScope.limits)
                }),
            MicroBenchmark(
                "changeset.apply.1", "validate + apply 1 `change` (root name), \(objects)-object scope",
                bytesPerOp: 0,
                setUp: { [unowned self] in
                    commitPrevious()
                    pending = [Self.rename(scope.state.rootUUID, to: nextName())]
                },
                operation: { [unowned self] in
                    outcome = scope.state.applying(pending, schema: BenchScope.schema, limits: BenchScope.limits)
                }),
            MicroBenchmark(
                "changeset.post.1",
                "1-fragment POST, model side: decode + apply + encode SSE event, \(objects)-object scope",
                bytesPerOp: 0,
                setUp: { [unowned self] in
                    commitPrevious()
                    // The client's bytes, with a fresh name each time (untimed).
                    pendingBody = Self.body([Self.rename(scope.state.rootUUID, to: nextName())])
                },
                operation: { [unowned self] in
                    outcome = scope.state.applying(
                        Self.decode(pendingBody), schema: BenchScope.schema, limits: BenchScope.limits)
                    guard let applied = outcome?.applied else { fatalError("POST rejected") }
                    blackHole(SSEWorkloads.changeSetEvent(applied))
                }),
        ]
    }
}
