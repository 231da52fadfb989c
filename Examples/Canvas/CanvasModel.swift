import Jetstream

/// The original Jetstream README's model — a canvas of shapes — as typed classes. They match the
/// gateway's built-in demo schema (`jetstream serve` without `--schema`), which the client checks.
enum ShapeKind: String, ModelEnum {
    case rect
    case oval
}

final class Canvas: ModelObject {
    @Synced var name: String? = nil
    @Synced var shapes: [Shape] = []
}

final class Shape: ModelObject {
    @Synced var x: Float = 0
    @Synced var y: Float = 0
    @Synced(min: 0) var width: Float = 100
    @Synced(min: 0) var height: Float = 100
    @Synced var color: Color? = nil
    @Synced(maxLength: 200) var label = ""
    @Synced var kind: ShapeKind = .rect
    /// Not synced: each peer's own selection.
    @Local var isSelected = false
}
