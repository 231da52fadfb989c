/// The status line and the headers of one HTTP/1.1 response, as the load generator needs them.
/// The header block is kept as bytes and turned into strings only when asked for: a load
/// generator reading sixty thousand responses a second must not spend its CPU on header strings.
public struct HTTPResponseHead: Sendable, Hashable {
    /// The status code, e.g. `200`.
    public var status: Int
    /// The header lines after the status line, each ending in LF (a CR before it is kept).
    let fieldBytes: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        fieldBytes = Array(headers.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
    }

    init(status: Int, fieldBytes: [UInt8]) {
        self.status = status
        self.fieldBytes = fieldBytes
    }

    /// Header fields in arrival order; names lower-cased, values with surrounding whitespace removed.
    public var headers: [(name: String, value: String)] {
        fieldBytes.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = HTTPResponseParser.trimmed(line[(colon + 1)...])
            return (name, String(decoding: value, as: UTF8.self))
        }
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
