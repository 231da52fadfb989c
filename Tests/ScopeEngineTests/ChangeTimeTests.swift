import Foundation
import Testing

@testable import ScopeEngine

/// The change time written into every accepted change set, checked against Foundation's own
/// RFC 3339 formatter (the engine writes it by hand: it is made once per change set).
@Suite struct ChangeTimeTests {
    /// Foundation's text for the whole second (exact: no fraction goes through a `Double`), with
    /// the milliseconds written beside it.
    private static func foundation(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)  // never negative here
        let whole = formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
        let digits = String(fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    @Test("times from 1970 to 9999 read as Foundation writes them, to the millisecond")
    func matchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [0, 1, 999, 86_399_999, 951_782_400_000, 1_796_000_000_123, 253_402_300_799_999]
        let random = (0..<2_000).map { _ in Int64.random(in: 0...253_402_300_799_999, using: &generator) }
        for milliseconds in edges + random {
            let written = ChangeTime.rfc3339(millisecondsSince1970: milliseconds)
            #expect(written == Self.foundation(milliseconds), "\(milliseconds)")
            #expect(ChangeTime.milliseconds(rfc3339: written) == milliseconds)
        }
    }

    @Test("years beyond 9999 and before 1970 keep their digits")
    func outsideFourDigits() {
        #expect(ChangeTime.rfc3339(millisecondsSince1970: 253_402_300_800_000) == "10000-01-01T00:00:00.000Z")
        #expect(ChangeTime.rfc3339(millisecondsSince1970: -1) == "1969-12-31T23:59:59.999Z")
    }
}
