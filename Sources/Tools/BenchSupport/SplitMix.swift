import Foundation
import JetstreamModel

/// SplitMix64: deterministic inputs, so runs are comparable.
public struct SplitMix {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A UUID made of the next 128 bits (not RFC 4122 versioned; the model accepts any UUID).
    public mutating func uuid() -> UUID {
        let high = next()
        let low = next()
        return withUnsafeBytes(of: (high, low)) { raw in
            UUID(uuid: raw.load(as: uuid_t.self))
        }
    }

    /// A coordinate in 0..<10 000 with quarter steps, as a JSON number.
    public mutating func coordinate() -> JSONValue { .number(JSONNumber(Double(next() % 40_000) / 4)) }
}
