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
    /// The bench schema: `Canvas` (root of scopes `bench-*`), `Layer`, `Group`, `Shape`.
    public static let schema: Schema = {
        do {
            return try Schema.parse(
                yaml: """
                    models:
                      Canvas: { name: String?, layers: [Layer] }
                      Layer: { name: String?, groups: [Group] }
                      Group: { name: String?, shapes: [Shape] }
                      Shape:
                        x: Float
                        y: Float
                        width:  { type: Float, default: 100, min: 0 }
                        height: { type: Float, default: 100, min: 0 }
                        color:  Color?
                        label:  { type: String, maxLength: 200, default: "" }
                        kind:   { enum: [rect, oval], default: rect }
                    scopes:
                      "bench-*": { root: Canvas }
                    """, file: "bench")
        } catch {
            fatalError("bench schema: \(error)")
        }
    }()

    public static let shapesPerGroup = 100
    public static let groupsPerLayer = 100
    /// Limits large enough for a 1M-object scope.
    public static let limits = Limits(
        maxObjectsPerScope: 2_000_000, maxFragmentsPerSet: 10_000, maxStringLength: 65_536,
        maxCollectionLength: 100_000)

    /// The current state; assign an accepted change set's state to move on.
    public var state: ScopeState
    /// Every group, in creation order.
    public var groups: [UUID] = []
    /// The source of every UUID and coordinate, seeded so runs are comparable.
    public var random = SplitMix(seed: 42)

    /// Builds a scope of about `objects` objects through ordinary change sets, one group a set.
    public init(objects: Int) {
        let canvas = BenchScope.schema.modelClass(named: "Canvas")!
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
                    fragments, schema: BenchScope.schema, limits: BenchScope.limits)
            else {
                fatalError(
                    "building the bench scope failed: \(state.applying(fragments, schema: BenchScope.schema).replies)")
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
