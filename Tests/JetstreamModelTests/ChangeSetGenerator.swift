import Foundation
import JetstreamModel

/// Builds random change sets for a canvas scope (shapes, a tree of nodes with partner links that
/// may form cycles, collection operations on the shapes) from a list of op codes, so PropertyBased
/// can generate and shrink the codes.
///
/// Each op is valid against a scratch copy that already holds the set's earlier ops; detaching a
/// subtree that holds an object added in this set is skipped, so sets are mostly accepted. An op
/// code divisible by 41 writes a bad value instead, so some sets are rejected.
struct ChangeSetGenerator {
    typealias F = Fixtures
    private var random: SplitMix
    private var scratch: ScopeState
    private var addedThisSet: Set<UUID> = []
    private var fragments: [SyncFragment] = []
    private(set) var containsInvalidFragment = false

    static func changeSet(for state: ScopeState, codes: [Int]) -> (fragments: [SyncFragment], invalid: Bool) {
        var generator = ChangeSetGenerator(random: SplitMix(seed: 0), scratch: state)
        for code in codes {
            generator.random = SplitMix(seed: UInt64(truncatingIfNeeded: code) &+ UInt64(state.version))
            generator.step(code: code)
        }
        return (generator.fragments, generator.containsInvalidFragment)
    }

    private mutating func step(code: Int) {
        if code % 41 == 0 {
            containsInvalidFragment = true
            let root = scratch.rootUUID
            fragments.append(F.change(root, "Canvas", ["name": 42]))
            return
        }
        let ops: [(inout ChangeSetGenerator) -> [SyncFragment]] = [
            { $0.addShape() }, { $0.addNode() }, { $0.changeShape() }, { $0.detach() }, { $0.setPartner() },
            { $0.moveNode() }, { $0.rename() }, { $0.shapeOperation() },
        ]
        let op = ops[Int(random.next() % UInt64(ops.count))]
        let produced = op(&self)
        guard !produced.isEmpty else { return }
        guard case .accepted(let applied) = scratch.applying(produced, schema: F.schema) else { return }
        scratch = applied.state
        fragments += produced
    }

    private mutating func newUUID() -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private func objects(of clsName: String) -> [UUID] {
        scratch.preOrderUUIDs().filter { scratch.object($0)?.clsName == clsName }
    }

    private mutating func pick(_ uuids: [UUID]) -> UUID? {
        uuids.isEmpty ? nil : uuids[Int(random.next() % UInt64(uuids.count))]
    }

    private func references(_ uuid: UUID, _ key: String) -> [UUID] {
        switch scratch.object(uuid)?[key] {
        case .references(let uuids): uuids
        default: []
        }
    }

    private mutating func number() -> JSONValue { .number(JSONNumber(Double(random.next() % 4000) / 4)) }

    private mutating func addShape() -> [SyncFragment] {
        let uuid = newUUID()
        addedThisSet.insert(uuid)
        let root = scratch.rootUUID
        var shapes = references(root, "shapes")
        shapes.insert(uuid, at: Int(random.next() % UInt64(shapes.count + 1)))
        if random.next() % 5 == 0, let existing = pick(shapes) { shapes.append(existing) }
        return [
            F.add(uuid, "Shape", ["x": number(), "label": .string("s\(random.next() % 100)")]),
            F.change(root, "Canvas", ["shapes": .array(shapes.map(F.ref))]),
        ]
    }

    private mutating func addNode() -> [SyncFragment] {
        let uuid = newUUID()
        addedThisSet.insert(uuid)
        let parent = pick(objects(of: "Node") + [scratch.rootUUID])!
        let clsName = scratch.object(parent)!.clsName
        let children = references(parent, "children") + [uuid]
        let add = F.add(uuid, "Node", ["name": random.next() % 2 == 0 ? nil : .string("n\(random.next() % 10)")])
        return [add, F.change(parent, clsName, ["children": .array(children.map(F.ref))])]
    }

    private mutating func changeShape() -> [SyncFragment] {
        guard let shape = pick(objects(of: "Shape")) else { return [] }
        let kinds: [JSONValue] = ["rect", "oval"]
        var properties: JSONObject = ["y": number()]
        if random.next() % 2 == 0 { properties["kind"] = kinds[Int(random.next() % 2)] }
        if random.next() % 2 == 0 {
            properties["color"] = random.next() % 3 == 0 ? nil : .number(JSONNumber(random.next() % 0x1_0000_0000))
        }
        return [F.change(shape, "Shape", properties)]
    }

    /// Drops one child of a node or the root, unless that would orphan something added in this set.
    private mutating func detach() -> [SyncFragment] {
        let parent = pick(objects(of: "Node") + [scratch.rootUUID])!
        let key = parent == scratch.rootUUID && random.next() % 2 == 0 ? "shapes" : "children"
        var children = references(parent, key)
        guard !children.isEmpty else { return [] }
        let index = Int(random.next() % UInt64(children.count))
        let removed = children.remove(at: index)
        guard !subtree(of: removed).contains(where: addedThisSet.contains) else { return [] }
        return [F.change(parent, scratch.object(parent)!.clsName, [key: .array(children.map(F.ref))])]
    }

    private mutating func setPartner() -> [SyncFragment] {
        let nodes = objects(of: "Node")
        guard let node = pick(nodes) else { return [] }
        let partner: JSONValue = random.next() % 4 == 0 ? nil : pick(nodes).map(F.ref) ?? nil
        return [F.change(node, "Node", ["partner": partner])]
    }

    /// Moves a node under another parent that is not inside it.
    private mutating func moveNode() -> [SyncFragment] {
        let nodes = objects(of: "Node")
        guard let node = pick(nodes) else { return [] }
        let inside = subtree(of: node)
        let candidates = (nodes + [scratch.rootUUID]).filter { !inside.contains($0) }
        guard let target = pick(candidates) else { return [] }
        var fragments: [SyncFragment] = []
        for parent in scratch.parents(of: node).filter({ $0.key == "children" }).map(\.uuid) where parent != target {
            let children = references(parent, "children").filter { $0 != node }
            fragments.append(
                F.change(parent, scratch.object(parent)!.clsName, ["children": .array(children.map(F.ref))]))
        }
        let children = references(target, "children").filter { $0 != node } + [node]
        fragments.append(F.change(target, scratch.object(target)!.clsName, ["children": .array(children.map(F.ref))]))
        return fragments
    }

    /// An operations object on the canvas's shapes: a new shape inserted before a random one (or at
    /// the end), one removed (every occurrence), or one moved.
    private mutating func shapeOperation() -> [SyncFragment] {
        let root = scratch.rootUUID
        let shapes = references(root, "shapes")
        let anchor = random.next() % 4 == 0 ? JSONValue.null : pick(shapes).map(F.ref) ?? .null
        switch random.next() % 3 {
        case 0:
            let uuid = newUUID()
            addedThisSet.insert(uuid)
            return [
                F.add(uuid, "Shape", ["x": number()]),
                F.change(root, "Canvas", ["shapes": ["insert": [F.ref(uuid)], "before": anchor]]),
            ]
        case 1:
            guard let removed = pick(shapes), !addedThisSet.contains(removed) else { return [] }
            return [F.change(root, "Canvas", ["shapes": ["remove": [F.ref(removed)]]])]
        default:
            guard let moved = pick(shapes) else { return [] }
            return [F.change(root, "Canvas", ["shapes": ["insert": [F.ref(moved)], "before": anchor]])]
        }
    }

    private mutating func rename() -> [SyncFragment] {
        [F.change(scratch.rootUUID, "Canvas", ["name": .string("canvas \(random.next() % 100)")])]
    }

    /// Everything reachable from `uuid` through children (test-side sweep; scopes here are small).
    private func subtree(of uuid: UUID) -> Set<UUID> {
        var found: Set<UUID> = [uuid]
        var pending = [uuid]
        while let next = pending.popLast() {
            for child in references(next, "children") where found.insert(child).inserted { pending.append(child) }
        }
        return found
    }
}
