/// A parsed and validated request head: request line, header lines and what they imply.
public struct HTTP1RequestHead: Sendable, Hashable {
    /// The method token, for example `GET`.
    public var method: String
    /// The request target exactly as sent (origin-form `/a?b`, absolute-form, or `*`).
    public var target: String
    public var version: HTTP1Version
    /// Header lines in order; names keep their case, values are trimmed.
    public var headers: [HTTP1Header]
    /// How the body is delimited.
    public var framing: HTTP1BodyFraming
    /// Whether the connection may stay open after the response (version and `Connection`).
    public var keepAlive: Bool
    /// `Expect: 100-continue` was sent.
    public var expectsContinue: Bool

    public init(
        method: String, target: String, version: HTTP1Version, headers: [HTTP1Header],
        framing: HTTP1BodyFraming = .none, keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// The values of every header named `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        headers.filter { HTTP1Syntax.equalsIgnoringCase($0.name, name) }.map(\.value)
    }
}
