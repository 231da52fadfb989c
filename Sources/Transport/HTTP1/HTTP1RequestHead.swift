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

/// One header field line of a request, as it appeared on the wire (name case preserved).
public struct HTTP1Header: Sendable, Hashable {
    /// The field name, exactly as sent.
    public var name: String
    /// The field value with leading and trailing whitespace removed.
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the name is `name`, compared case-insensitively (ASCII).
    public func hasName(_ name: String) -> Bool {
        HTTP1Syntax.equalsIgnoringCase(self.name, name)
    }
}

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

/// How the body of a request is delimited (RFC 9112 §6.3).
public enum HTTP1BodyFraming: Sendable, Hashable {
    /// No body: neither `Content-Length` nor `Transfer-Encoding`.
    case none
    /// Exactly this many bytes follow the head.
    case contentLength(Int)
    /// `Transfer-Encoding: chunked`; decode with ``HTTP1ChunkedDecoder``.
    case chunked
}
