/// Recognises the HTTP/2 client connection preface that starts a prior-knowledge h2c connection.
///
/// ```swift
/// switch HTTP2Preface.match(firstBytes) {
/// case .http2: handOverToHTTP2()
/// case .notHTTP2: parseAsHTTP1()
/// case .incomplete: waitForMoreBytes()
/// }
/// ```
public enum HTTP2Preface {
    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 §3.4), 24 bytes.
    public static let bytes: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// The outcome of comparing a connection's first bytes with the preface.
    public enum Match: Sendable, Equatable {
        case http2
        case notHTTP2
        /// Every byte so far matches but fewer than 24 arrived.
        case incomplete
    }

    /// Compares the start of `received` with the preface.
    public static func match(_ received: some Collection<UInt8>) -> Match {
        for (got, expected) in zip(received, bytes) where got != expected {
            return .notHTTP2
        }
        return received.count >= bytes.count ? .http2 : .incomplete
    }
}
