import HTTPServer
import HTTPTypes
import Store

/// The `Idempotency-Key` of a change-set request and the request's digest, as stored with its
/// first outcome (``Store/IdempotencyRecord``).
///
/// The digest is the exact request body, tagged `raw:` — not a hash. It exists to tell a true
/// retry from a key reused for another request; comparing the bytes themselves makes that exact
/// (no collision can be crafted) and needs no cryptography dependency. The price is storage: up
/// to `--max-body-bytes` per key for `--idempotency-ttl` (docs/gateway.md, "Idempotency").
///
/// ```swift
/// if let idempotency = try IdempotencyRequest(request) { … }
/// ```
struct IdempotencyRequest: Sendable {
    static let headerName = HTTPField.Name("Idempotency-Key")!
    static let replayedHeaderName = HTTPField.Name("Idempotent-Replayed")!
    static let maxKeyLength = 255
    private static let digestTag = Array("raw:".utf8)

    let key: String
    let digest: [UInt8]

    init(key: String, body: [UInt8]) {
        self.key = key
        self.digest = Self.digestTag + body
    }

    /// The request's key and digest, `nil` without an `Idempotency-Key` header, or a `400` for a
    /// key that is empty, too long or not visible ASCII. A structured-field string (`"…"`) is
    /// accepted too and means the text between the quotes.
    init?(_ request: HTTPServerRequest) throws(Problem) {
        guard var text = request.headerFields[Self.headerName] else { return nil }
        if text.utf8.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
            text = String(text.dropFirst().dropLast())
        }
        guard !text.isEmpty, text.utf8.count <= Self.maxKeyLength,
            text.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw Problem(
                .badRequest,
                detail:
                    "Idempotency-Key must be 1 to \(Self.maxKeyLength) visible ASCII characters (a UUID is a good key)"
            )
        }
        self.init(key: text, body: request.body)
    }

    /// The record stored with the outcome (the store sets the version and time).
    func record(status: Int, response: [UInt8]) -> IdempotencyRecord {
        IdempotencyRecord(key: key, requestDigest: digest, status: status, response: response)
    }

    /// Whether an outcome is final for this body and so replayed: a rejected change set or a
    /// failed `If-Match`. Store failures and unknown scopes are not stored; a retry tries again.
    static func isStored(_ problem: Problem) -> Bool {
        problem.kind == .invalidChangeSet || problem.kind == .preconditionFailed
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
