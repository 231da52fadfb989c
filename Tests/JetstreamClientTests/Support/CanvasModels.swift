import Jetstream

// The demo schema's models (`jetstream serve` without `--schema`), as an app declares them; the
// client checks them against the server's schema at fetch.

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
    @Local var isSelected = false
}
