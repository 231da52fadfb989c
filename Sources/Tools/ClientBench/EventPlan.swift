import BenchSupport

/// Which shapes the benchmark's events change: even events an observed shape, odd ones any shape
/// (so about half the events fire an observer, the rest change an unobserved one).
enum EventPlan {
    static func shapes(count: Int, observed: [Int], objects: Int, seed: UInt64) -> [Int] {
        var random = SplitMix(seed: seed)
        return (0..<count).map { index in
            index % 2 == 0
                ? observed[Int.random(in: 0..<observed.count, using: &random)]
                : Int.random(in: 0..<objects, using: &random)
        }
    }

    /// `count` distinct shape indices out of `objects`.
    static func observed(count: Int, objects: Int, seed: UInt64) -> [Int] {
        var random = SplitMix(seed: seed)
        var chosen: [Int] = []
        var seen: Set<Int> = []
        while chosen.count < min(count, objects) {
            let index = Int.random(in: 0..<objects, using: &random)
            if seen.insert(index).inserted { chosen.append(index) }
        }
        return chosen
    }
}
