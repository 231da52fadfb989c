/// The outcome of ``HTTP1RequestParser/parse(_:limits:)``.
public enum HTTP1ParseResult: Sendable, Hashable {
    /// A whole request head; `consumed` bytes (including any leading empty lines) were used.
    case complete(HTTP1RequestHead, consumed: Int)
    /// Every byte so far is a valid prefix of a request head; feed more.
    case incomplete
    /// The bytes can never become a valid request head: answer `error.status` and close.
    case invalid(HTTP1ParseError)
}
