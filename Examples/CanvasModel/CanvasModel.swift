import Jetstream

/// The original Jetstream README's model — a canvas of shapes — as typed classes. They match the
/// gateway's built-in demo schema (`jetstream serve` without `--schema`), which the client checks.
/// One definition for the example, the Swift client's benchmark and the tests.
///
/// ```swift
/// let canvas = Canvas()
/// canvas.shapes.append(Shape())
/// let scope = Scope(name: "canvas-1", root: canvas)
/// ```
public enum ShapeKind: String, ModelEnum {
    case rect
    case oval
}

public final class Canvas: ModelObject {
    @Synced public var name: String? = nil
    @Synced public var shapes: [Shape] = []
}

public final class Shape: ModelObject {
    @Synced public var x: Float = 0
    @Synced public var y: Float = 0
    @Synced(min: 0) public var width: Float = 100
    @Synced(min: 0) public var height: Float = 100
    @Synced public var color: Color? = nil
    @Synced(maxLength: 200) public var label = ""
    @Synced public var kind: ShapeKind = .rect
    /// Not synced: each peer's own selection.
    @Local public var isSelected = false
}
