import Jetstream

// The demo schema's canvas as typed classes (the same as Examples/Canvas): `jetstream serve`
// without `--schema` serves it, and `Client.fetch` checks that these classes match it.

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

/// A small deterministic generator, so every run picks the same shapes.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Which shapes the benchmark's events change: even events an observed shape, odd ones any shape
/// (so about half the events fire an observer, the rest change an unobserved one).
enum EventPlan {
    static func shapes(count: Int, observed: [Int], objects: Int, seed: UInt64) -> [Int] {
        var random = SplitMix64(state: seed)
        return (0..<count).map { index in
            index % 2 == 0
                ? observed[Int.random(in: 0..<observed.count, using: &random)]
                : Int.random(in: 0..<objects, using: &random)
        }
    }

    /// `count` distinct shape indices out of `objects`.
    static func observed(count: Int, objects: Int, seed: UInt64) -> [Int] {
        var random = SplitMix64(state: seed)
        var chosen: [Int] = []
        var seen: Set<Int> = []
        while chosen.count < min(count, objects) {
            let index = Int.random(in: 0..<objects, using: &random)
            if seen.insert(index).inserted { chosen.append(index) }
        }
        return chosen
    }
}
