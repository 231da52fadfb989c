/// Small timing helpers; figures are printed, never asserted.
enum Measure {
    static let clock = ContinuousClock()

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Runs `body` once and returns its wall time in seconds.
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = clock.now
        try body()
        return seconds(clock.now - start)
    }

    /// Per-iteration times in microseconds.
    static func samples(_ count: Int, _ body: () throws -> Void) rethrows -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = clock.now
            try body()
            samples.append(seconds(clock.now - start) * 1e6)
        }
        return samples
    }

    static func percentile(_ samples: [Double], _ p: Double) -> Double {
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    static func format(_ value: Double, _ digits: Int = 1) -> String {
        let scale = pow10(digits)
        let rounded = (value * scale).rounded() / scale
        return String(rounded)
    }

    private static func pow10(_ digits: Int) -> Double { (0..<digits).reduce(1.0) { value, _ in value * 10 } }

    static func row(_ cells: [String], widths: [Int]) -> String {
        zip(cells, widths).map { cell, width in
            cell.count >= width ? cell : cell + String(repeating: " ", count: width - cell.count)
        }.joined(separator: " | ")
    }
}
