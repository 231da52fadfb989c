/// A colour as the wire carries it: one `0xRRGGBBAA` integer.
///
/// ```swift
/// let red = Color(red: 255, green: 0, blue: 0)
/// red.rgba  // 0xFF0000FF
/// ```
public struct Color: Hashable, Sendable, ScalarPropertyValue, CustomStringConvertible {
    /// The packed `0xRRGGBBAA` value.
    public var rgba: UInt32

    /// A colour from its packed `0xRRGGBBAA` value.
    public init(rgba: UInt32) {
        self.rgba = rgba
    }

    /// A colour from 8-bit channels.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        rgba = UInt32(red) << 24 | UInt32(green) << 16 | UInt32(blue) << 8 | UInt32(alpha)
    }

    public var red: UInt8 { UInt8(truncatingIfNeeded: rgba >> 24) }
    public var green: UInt8 { UInt8(truncatingIfNeeded: rgba >> 16) }
    public var blue: UInt8 { UInt8(truncatingIfNeeded: rgba >> 8) }
    public var alpha: UInt8 { UInt8(truncatingIfNeeded: rgba) }

    public var description: String {
        let hex = String(rgba, radix: 16)
        return "#" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}
