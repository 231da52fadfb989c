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
        events.append(.request(state.id, request, body: body))
    }
}

extension HTTPField.Name {
    /// `HTTP2-Settings`, the base64url SETTINGS payload of an `Upgrade: h2c` request.
    public static var http2Settings: HTTPField.Name { HTTPField.Name("HTTP2-Settings")! }
}
