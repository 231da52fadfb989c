import Jetstream

// The original README's models (jetstream-ios, "Quick start" and "Atomic ChangeSets"), declared as
// it declared them. Only what Swift 6 on Linux needs differs: `dynamic var` (the Objective-C
// runtime) is today's `@Synced var`, an optional needs its `= nil`, and `UIColor` is `Color`.

public class Shape: ModelObject {
    @Synced var x: Float = 0
    @Synced var y: Float = 0
    @Synced var width: Float = 100
    @Synced var height: Float = 100
    @Synced var color: Color = Color(red: 255, green: 0, blue: 0)  // UIColor.redColor()
}

public class Canvas: ModelObject {
    @Synced var name: String? = nil
    @Synced var shapes = [Shape]()
}

/// The cart of the README's atomic change set (`self.cart.items`, `self.cart.totalPrice`).
public class Cart: ModelObject {
    @Synced var items = [Item]()
    @Synced var totalPrice: Double = 0
}

public class Item: ModelObject {
    @Synced var price: Double = 0
}

// UIKit stand-ins for the README's view classes: only what the snippets touch.

struct Frame: Equatable {
    var x: Float, y: Float, width: Float, height: Float
}

class View {
    var frame = Frame(x: 0, y: 0, width: 0, height: 0)
    var backgroundColor: Color?
    private(set) var children: [View] = []
    private(set) weak var parent: View?

    func addChild(_ child: View) {
        children.append(child)
        child.parent = self
    }

    func removeFromParentView() {
        parent?.children.removeAll { $0 === self }
        parent = nil
    }
}
