/// Why a JSON text could not be parsed, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Zero-based offset of the offending byte in the input.
    public let offset: Int
    /// What was wrong, e.g. "expected ',' or '}' in object".
    public let reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
