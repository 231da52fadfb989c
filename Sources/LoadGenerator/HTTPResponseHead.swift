/// The status line and the headers of one HTTP/1.1 response, as the load generator needs them.
public struct HTTPResponseHead: Sendable, Hashable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// Header fields in arrival order; names lower-cased, values with surrounding whitespace removed.
    public var headers: [(name: String, value: String)]

    public init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }

    /// The first value of the header `name` (case-insensitive).
    public func value(of name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        for header in headers {
            hasher.combine(header.name)
            hasher.combine(header.value)
        }
    }
}
