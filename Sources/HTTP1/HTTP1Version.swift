/// The HTTP version of a request line: `HTTP/1.0` or `HTTP/1.1`.
public struct HTTP1Version: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTP1Version(major: 1, minor: 0)
    public static let http1_1 = HTTP1Version(major: 1, minor: 1)

    /// `HTTP/1.1`, as written on a request or status line.
    public var description: String { "HTTP/\(major).\(minor)" }
}
