import Foundation
import JetstreamJSON
import JetstreamModel
import ScopeEngine

/// The methods of the built-in demo schema (``Schema/demo``), registered when the gateway runs it.
public enum DemoMethods {
    /// Every demo method.
    public static let all: [ScopeMethod] = [arrange, rename]

    /// `rename`: sets the canvas's `name` to `args.name` (a string, or null): the change a client
    /// would POST as a change set, as a method (what `jetstream bench write --method rename`
    /// compares). Result: `{"name": …}`.
    public static let rename = ScopeMethod("rename") { call in
        let name = call.args["name"] ?? .null
        guard name == .null || name.string.map({ $0.utf8.count <= 1_000 }) == true else {
            throw MethodRejection("name must be a string of at most 1,000 bytes, or null")
        }
        guard let root = call.state.object(call.state.rootUUID), root.clsName == "Canvas" else {
            throw MethodRejection("rename names a Canvas; this scope's root is not one")
        }
        return MethodOutcome(
            fragments: [
                SyncFragment(type: .change, uuid: root.uuid, clsName: root.clsName, properties: ["name": name])
            ],
            result: ["name": name])
    }

    /// `arrange`: lays the canvas's shapes out in a grid, in their order, `columns` wide (args
    /// `{"columns": N}`, 1–100; by default the smallest square that holds them). Cells are as wide
    /// and high as the largest shape plus a 20-unit gap. Other members of `args` are ignored.
    /// Result: `{"moved": <shapes whose place changed>, "columns": N}`.
    public static let arrange = ScopeMethod("arrange") { call in
        guard let root = call.state.object(call.state.rootUUID), case .references(let shapes)? = root["shapes"] else {
            throw MethodRejection("arrange lays out the shapes of a Canvas; this scope's root is not one")
        }
        let columns: Int
        switch call.args["columns"] {
        case nil, .null?:
            columns = max(1, Int(Double(shapes.count).squareRoot().rounded(.up)))
        case .number(let number)?:
            guard let value = number.int64Value, (1...100).contains(value) else {
                throw MethodRejection("columns must be an integer from 1 to 100, got \(number)")
            }
            columns = Int(value)
        case let other?:
            throw MethodRejection("columns must be an integer from 1 to 100, got \(other.encodedString().prefix(40))")
        }
        let objects = shapes.compactMap { call.state.object($0) }
        let cellWidth = (objects.compactMap { $0["width"]?.number }.max() ?? 100) + 20
        let cellHeight = (objects.compactMap { $0["height"]?.number }.max() ?? 100) + 20
        var fragments: [SyncFragment] = []
        for (index, shape) in objects.enumerated() {
            let x = 20 + Double(index % columns) * cellWidth
            let y = 20 + Double(index / columns) * cellHeight
            guard shape["x"]?.number != x || shape["y"]?.number != y else { continue }
            fragments.append(
                SyncFragment(
                    type: .change, uuid: shape.uuid, clsName: shape.clsName,
                    properties: ["x": .number(JSONNumber(x)), "y": .number(JSONNumber(y))]))
        }
        return MethodOutcome(
            fragments: fragments,
            result: ["moved": .number(JSONNumber(fragments.count)), "columns": .number(JSONNumber(columns))])
    }
}

extension Value {
    /// A Float or Double property's value as a Double.
    fileprivate var number: Double? {
        switch self {
        case .float(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
}
