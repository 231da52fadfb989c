import HTTPServer
import HTTPTypes
import ScopeEngine
import Store

/// The `Idempotency-Key` header of a change-set request: parsed into the engine's
/// ``ScopeEngine/IdempotencyKey`` (key + request digest), and a stored outcome answered again.
///
/// ```swift
/// if let key = try IdempotencyRequest.key(of: request, subject: grant?.subject) { engine.submitOnce(…, idempotency: key) { … } }
/// ```
enum IdempotencyRequest {
    static let headerName = HTTPField.Name("Idempotency-Key")!
    static let replayedHeaderName = HTTPField.Name("Idempotent-Replayed")!
    /// When the client made the change set (RFC 3339): a set made before the idempotency window is
    /// decided from the change-set log, never applied twice (docs/gateway.md, "Idempotency").
    static let createdHeaderName = HTTPField.Name("Idempotency-Key-Created")!
    static let maxKeyLength = 255

    /// The request's key and digest, `nil` without an `Idempotency-Key` header, or a `400` for a
    /// key that is empty, too long or not visible ASCII. A structured-field string (`"…"`) is
    /// accepted too and means the text between the quotes.
    /// `subject` is the authenticated subject: keys are per scope and per subject.
    static func key(of request: HTTPServerRequest, subject: String?) throws(Problem) -> IdempotencyKey? {
        // Checked with or without a key: a malformed header is refused, never silently ignored.
        let created = try createdTime(of: request)
        guard var text = request.headerFields.value(of: headerName) else { return nil }
        if text.utf8.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
            text = String(text.dropFirst().dropLast())
        }
        guard !text.isEmpty, text.utf8.count <= maxKeyLength, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw Problem(
                .badRequest,
                detail: "Idempotency-Key must be 1 to \(maxKeyLength) visible ASCII characters (a UUID is a good key)")
        }
        // A key is bound to its request: for a PATCH, a restore, a revert or a method call the method and path
        // are part of it, so the same key and body sent elsewhere is a reused key, not a replay.
        let path = request.path
        let bound =
            request.method == .patch || path.hasSuffix("/restore") || path.hasSuffix("/revert")
            || path.contains("/methods/")
        let target = bound ? "\(request.method) \(path)" : nil

        return IdempotencyKey(key: text, subject: subject, target: target, body: request.body, created: created)
    }

    /// `Idempotency-Key-Created` in ms since 1970, nil without one, `400` when it is not RFC 3339.
    private static func createdTime(of request: HTTPServerRequest) throws(Problem) -> Int64? {
        guard let header = request.headerFields.value(of: createdHeaderName) else { return nil }
        guard let milliseconds = IdempotencyKey.createdMilliseconds(header) else {
            throw Problem(
                .badRequest,
                detail: "Idempotency-Key-Created must be an RFC 3339 time such as 2026-11-28T16:23:24.123Z, "
                    + "got '\(header)'")
        }
        return milliseconds
    }

    /// The stored outcome answered again, marked `Idempotent-Replayed: true`.
    static func replay(_ record: IdempotencyRecord) -> HTTPServerResponse {
        let status = HTTPResponse.Status(code: record.status)
        var fields: HTTPFields = [
            .contentType: status.kind == .successful ? "application/json" : "application/problem+json",
            replayedHeaderName: "true",
        ]
        if let version = record.version {
            fields[.eTag] = EntityTag.header(for: Int(version))
            fields[.cacheControl] = "no-cache"
        }
        return HTTPServerResponse(status: status, headerFields: fields, body: record.response)
    }
}
