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
