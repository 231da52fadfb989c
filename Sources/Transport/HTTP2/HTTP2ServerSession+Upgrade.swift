internal import CNGHTTP2
public import HTTPTypes

extension HTTP2ServerSession {
    /// Switches an HTTP/1.1 `Upgrade: h2c` request to HTTP/2 (RFC 7540 §3.2): applies the
    /// client's `HTTP2-Settings` and makes the request stream 1, half-closed by the client, whose
    /// response the caller sends with ``respond(to:with:body:)`` or ``startStream(_:with:)``.
    ///
    /// The caller first writes `HTTP/1.1 101 Switching Protocols` (with `Connection: Upgrade`
    /// and `Upgrade: h2c`), then this session's output; the client then sends the preface.
    ///
    /// ```swift
    /// try session.upgrade(settingsHeader: request.headerFields[.http2Settings]!, request: request, body: body)
    /// // events now start with .request(HTTP2StreamID(1), request, body: body)
    /// ```
    ///
    /// - Throws: ``HTTP2SessionError`` when the header is not base64url or not a SETTINGS payload.
    public func upgrade(settingsHeader: String, request: HTTPRequest, body: [UInt8]) throws(HTTP2SessionError) {
        guard let payload = Base64URL.decode(settingsHeader) else {
            throw HTTP2SessionError(
                "HTTP2-Settings", code: NGHTTP2_ERR_INVALID_ARGUMENT.rawValue,
                detail: "not base64url: \(settingsHeader)")
        }
        let isHead: Int32 = request.method == .head ? 1 : 0
        let status = payload.withUnsafeBufferPointer { buffer in
            nghttp2_session_upgrade2(session, buffer.baseAddress, buffer.count, isHead, nil)
        }
        guard status == 0 else {
            throw HTTP2SessionError(
                "nghttp2_session_upgrade2", code: status, detail: "HTTP2-Settings \(settingsHeader)")
        }
        let state = HTTP2StreamState(id: HTTP2StreamID(1))
        state.method = request.method.rawValue
        state.headersComplete = true
        state.requestDelivered = true
        streams[1] = state
        highestClientStream = 1
        events.append(.request(state.id, request, body: body))
    }
}

/// The `HTTP2-Settings` header of an `Upgrade: h2c` request (RFC 7540 §3.2.1).
public enum HTTP2UpgradeSettings {
    /// Why `header` cannot be the base64url SETTINGS payload an upgrade needs, or nil when it can:
    /// base64url, whole 6-byte settings, and values in their ranges (RFC 9113 §6.5.2). The server
    /// answers 400 instead of switching protocols and then failing.
    ///
    /// ```swift
    /// HTTP2UpgradeSettings.problem(in: "AAMAAABk")   // nil: MAX_CONCURRENT_STREAMS = 100
    /// HTTP2UpgradeSettings.problem(in: "!!")         // "HTTP2-Settings is not base64url"
    /// ```
    ///
    /// Each reason is a fixed sentence, never built from the header: it is answered, logged and
    /// used as a metric label (`jetstream_http_rejected_total{reason}`), which must stay a small set.
    public static func problem(in header: String) -> String? {
        guard let payload = Base64URL.decode(header) else { return "HTTP2-Settings is not base64url" }
        guard payload.count % 6 == 0 else {
            return "HTTP2-Settings is not a whole number of 6-byte settings"
        }
        for offset in stride(from: 0, to: payload.count, by: 6) {
            let identifier = UInt16(payload[offset]) << 8 | UInt16(payload[offset + 1])
            let value = payload[(offset + 2)..<(offset + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch identifier {
            case 0x2 where value > 1: return "SETTINGS_ENABLE_PUSH must be 0 or 1"
            case 0x4 where value > 0x7FFF_FFFF: return "SETTINGS_INITIAL_WINDOW_SIZE is above 2^31-1"
            case 0x5 where value < 16_384 || value > 16_777_215:
                return "SETTINGS_MAX_FRAME_SIZE must be from 16384 to 16777215"
            default: continue
            }
        }
        return nil
    }
}

extension HTTPField.Name {
    /// `HTTP2-Settings`, the base64url SETTINGS payload of an `Upgrade: h2c` request.
    public static var http2Settings: HTTPField.Name { HTTPField.Name("HTTP2-Settings")! }
}

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

/// Decodes base64url without padding (RFC 4648 §5), as `HTTP2-Settings` carries it.
enum Base64URL {
    static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            if character == UInt8(ascii: "=") { break }
            guard let value = sextet(character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // A single leftover character (6 bits) cannot encode a byte.
        return bits >= 6 ? nil : output
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"), UInt8(ascii: "+"): 62
        case UInt8(ascii: "_"), UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
