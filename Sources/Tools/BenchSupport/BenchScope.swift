import Foundation
import JetstreamModel

/// A layered canvas: Canvas → layers → groups → 100 shapes each, so scopes of any size keep small
/// collections and a change set touches the same amount whatever the scope's size. Shared by
/// `ModelBench` and `HotPathBench`.
///
/// ```swift
/// var scope = BenchScope(objects: 10_000)
/// let fragments = scope.typicalChangeSet()
/// let outcome = scope.state.applying(fragments, schema: BenchScope.schema, limits: BenchScope.limits)
/// ```
public struct BenchScope {
    /// The bench schema: the demo's `Canvas` and `Shape` (``JetstreamModel/Schema/demo``) with
    /// `Layer` and `Group` in between; `Canvas` is the root of scopes `bench-*` (its own `shapes`
    /// stay empty).
    public static let schema: Schema = {
        do {
            return try Schema.demo(
                adding: """
                    models:
                      Canvas: { layers: [Layer] }
                      Layer: { name: String?, groups: [Group] }
                      Group: { name: String?, shapes: [Shape] }
                    scopes:
                      "bench-*": { root: Canvas }
                    """, file: "bench")
        } catch {
            fatalError("bench schema: \(error)")
        }
    }()

    /// ``schema`` with ownership rules on every class below the root (`write: owner, delete:
    /// owner`) and the shapes' `label` immutable: what `ModelBench --only rules` compares with
    /// ``schema`` to cost the checks (the same classes and properties otherwise).
    public static let rulesSchema: Schema = {
        guard case .object(var document) = schema.jsonValue, case .object(var models)? = document["models"] else {
            fatalError("bench schema: not an object")
        }
        for name in ["Layer", "Group", "Shape"] {
            guard case .object(let members)? = models[name] else { fatalError("bench schema: no \(name)") }
            var ruled: JSONObject = ["rules": ["write": "owner", "delete": "owner"]]
            for member in members {
                if name == "Shape", member.key == "label", case .object(var label) = member.value {
                    label["immutable"] = true
                    ruled[member.key] = .object(label)
                } else {
                    ruled[member.key] = member.value
                }
            }
            models[name] = .object(ruled)
        }
        document["models"] = .object(models)
        do {
            return try Schema.parse(tree: .object(document))
        } catch {
            fatalError("bench rules schema: \(error)")
        }
    }()

    public static let shapesPerGroup = 100
    public static let groupsPerLayer = 100
    /// Limits large enough for a 1M-object scope.
    public static let limits = Limits(
        maxObjectsPerScope: 2_000_000, maxFragmentsPerSet: 10_000, maxStringLength: 65_536,
        maxCollectionLength: 100_000)

    /// The schema the scope was built under (its objects' classes are this schema's).
    public let schema: Schema
    /// Who the scope's change sets are written by: its owner when built under ``rulesSchema``.
    public let author: ChangeAuthor
    /// The current state; assign an accepted change set's state to move on.
    public var state: ScopeState
    /// Every group, in creation order.
    public var groups: [UUID] = []
    /// The source of every UUID and coordinate, seeded so runs are comparable.
    public var random = SplitMix(seed: 42)

    /// Builds a scope of about `objects` objects through ordinary change sets, one group a set,
    /// written under `schema` by `author` (who owns everything the scope holds).
    public init(objects: Int, schema: Schema = BenchScope.schema, author: ChangeAuthor = .server()) {
        self.schema = schema
        self.author = author
        let canvas = schema.modelClass(named: "Canvas")!
        state = ScopeState(rootUUID: UUID(), rootClass: canvas)
        let groupCount = max(1, objects / (BenchScope.shapesPerGroup + 1))
        var layers: [UUID] = []
        var groupsOfLayer: [UUID] = []
        for groupIndex in 0..<groupCount {
            var fragments: [SyncFragment] = []
            if groupIndex % BenchScope.groupsPerLayer == 0 {
                let layer = random.uuid()
                layers.append(layer)
                groupsOfLayer = []
                fragments.append(SyncFragment(type: .add, uuid: layer, clsName: "Layer", properties: ["name": "layer"]))
                fragments.append(
                    SyncFragment(
                        type: .change, uuid: state.rootUUID, clsName: "Canvas",
                        properties: ["layers": .array(layers.map { .string($0.wireString) })]))
            }
            let group = random.uuid()
            groups.append(group)
            groupsOfLayer.append(group)
            var shapes: [JSONValue] = []
            for _ in 0..<BenchScope.shapesPerGroup {
                let shape = random.uuid()
                shapes.append(.string(shape.wireString))
                fragments.append(
                    SyncFragment(
                        type: .add, uuid: shape, clsName: "Shape",
                        properties: ["x": random.coordinate(), "y": random.coordinate(), "label": "shape"]))
            }
            fragments.append(
                SyncFragment(type: .add, uuid: group, clsName: "Group", properties: ["shapes": .array(shapes)]))
            fragments.append(
                SyncFragment(
                    type: .change, uuid: layers.last!, clsName: "Layer",
                    properties: ["groups": .array(groupsOfLayer.map { .string($0.wireString) })]))
            guard
                case .accepted(let applied) = state.applying(
                    fragments, schema: schema, limits: BenchScope.limits, author: author)
            else {
                let replies = state.applying(fragments, schema: schema, limits: BenchScope.limits, author: author)
                    .replies
                fatalError("building the bench scope failed: \(replies)")
            }
            state = applied.state
        }
    }

    /// Ten fragments: 3 shapes added to a group whose 3 oldest shapes are dropped (so 3 leave),
    /// 5 shapes moved, 1 group renamed. The scope's size stays the same.
    public mutating func typicalChangeSet() -> [SyncFragment] {
        let group = groups[Int(random.next() % UInt64(groups.count))]
        guard case .references(let current) = state.object(group)!["shapes"]! else { fatalError("no shapes") }
        let added = (0..<3).map { _ in random.uuid() }
        var fragments = added.map {
            SyncFragment(
                type: .add, uuid: $0, clsName: "Shape",
                properties: ["x": random.coordinate(), "y": random.coordinate()])
        }
        let kept = Array(current.dropFirst(3)) + added
        fragments.append(
            SyncFragment(
                type: .change, uuid: group, clsName: "Group",
                properties: ["shapes": .array(kept.map { .string($0.wireString) })]))
        for _ in 0..<5 {
            let otherGroup = groups[Int(random.next() % UInt64(groups.count))]
            guard case .references(let shapes) = state.object(otherGroup)!["shapes"]! else { fatalError("no shapes") }
            let shape = shapes[Int(random.next() % UInt64(shapes.count))]
            fragments.append(
                SyncFragment(
                    type: .change, uuid: shape, clsName: "Shape",
                    properties: ["x": random.coordinate(), "y": random.coordinate()]))
        }
        let renamed = groups[Int(random.next() % UInt64(groups.count))]
        fragments.append(
            SyncFragment(
                type: .change, uuid: renamed, clsName: "Group",
                properties: ["name": .string("group \(random.next() % 1000)")]))
        return fragments
    }
}

/// SplitMix64: deterministic inputs, so runs are comparable (and a failing seeded test replays).
///
/// ```swift
/// var random = SplitMix(seed: 42)
/// Int.random(in: 0..<10, using: &random)
/// ```
public struct SplitMix: RandomNumberGenerator {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A UUID made of the next 128 bits (not RFC 4122 versioned; the model accepts any UUID).
    public mutating func uuid() -> UUID {
        let high = next()
        let low = next()
        return withUnsafeBytes(of: (high, low)) { raw in
            UUID(uuid: raw.load(as: uuid_t.self))
        }
    }

    /// A coordinate in 0..<10 000 with quarter steps, as a JSON number.
    public mutating func coordinate() -> JSONValue { .number(JSONNumber(Double(next() % 40_000) / 4)) }
}
