import CanvasModel
import Foundation
import Jetstream
import JetstreamModel

/// What a canvas shows, comparable between a typed scope (read through its objects' properties)
/// and the server's state: the name, and every shape in order with all its synced properties.
struct CanvasSnapshot: Equatable, CustomStringConvertible {
    struct Shape: Equatable {
        var uuid: UUID
        var x: Float
        var y: Float
        var width: Float
        var height: Float
        var color: UInt32?
        var label: String
        var kind: String
    }

    var name: String?
    var shapes: [Shape]

    /// The typed objects' values.
    @MainActor
    init(_ canvas: Canvas) {
        name = canvas.name
        shapes = canvas.shapes.map { shape in
            Shape(
                uuid: shape.uuid, x: shape.x, y: shape.y, width: shape.width, height: shape.height,
                color: shape.color?.rgba, label: shape.label, kind: shape.kind.rawValue)
        }
    }

    /// A model-core state's values (the server's `GET`, or a scope's `currentState()`).
    init(_ state: ScopeState) throws {
        let root = state.root
        name = root["name"]?.stringValue
        guard case .references(let uuids)? = root["shapes"] else { throw HarnessError("the root has no shapes") }
        shapes = try uuids.map { uuid in
            guard let object = state.object(uuid) else { throw HarnessError("no object \(uuid) in the state") }
            func float(_ key: String) -> Float {
                if case .float(let value)? = object[key] { return value }
                return .nan
            }
            return Shape(
                uuid: uuid, x: float("x"), y: float("y"), width: float("width"), height: float("height"),
                color: object["color"]?.int64Value.map(UInt32.init(truncatingIfNeeded:)),
                label: object["label"]?.stringValue ?? "", kind: object["kind"]?.stringValue ?? "")
        }
    }

    var description: String {
        let list = shapes.map { shape in
            "\(shape.uuid.uuidString.prefix(8)) (\(shape.x), \(shape.y)) \(shape.width)×\(shape.height) "
                + "'\(shape.label.prefix(12))' \(shape.kind)"
        }
        return "'\(name ?? "nil")' [\(list.joined(separator: "; "))]"
    }
}
