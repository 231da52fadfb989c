/// An HTTP/2 stream identifier (RFC 9113 §5.1.1). Client-initiated request streams are odd.
///
/// ```swift
/// let first = HTTP2StreamID(1)  // the stream an h2c upgrade request becomes
/// ```
public struct HTTP2StreamID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: Int32

    public init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    public static func < (lhs: HTTP2StreamID, rhs: HTTP2StreamID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "stream \(rawValue)" }
}
