import HTTPServer
import HTTPTypes
import JetstreamModel

/// An RFC 9457 problem document, answered as `application/problem+json`.
///
/// ```swift
/// throw Problem(.notFound, detail: "no scope named 'canvas-9'")
/// ```
public struct Problem: Error, Sendable {
    public var kind: ProblemKind
    public var detail: String
    /// Extension members (e.g. `fragmentReplies`, `version`).
    public var extensions: JSONObject
    /// Extra response headers (e.g. `ETag`).
    public var headers: HTTPFields

    public init(_ kind: ProblemKind, detail: String, extensions: JSONObject = JSONObject(), headers: HTTPFields = [:]) {
        self.kind = kind
        self.detail = detail
        self.extensions = extensions
        self.headers = headers
    }

    /// The problem as a JSON object, `type`, `title`, `status` and `detail` first.
    public var jsonObject: JSONObject {
        var object = JSONObject()
        object["type"] = .string(kind.typeURI)
        object["title"] = .string(kind.title)
        object["status"] = .number(JSONNumber(kind.status.code))
        object["detail"] = .string(detail)
        for member in extensions { object[member.key] = member.value }
        return object
    }

    /// The HTTP response carrying this problem.
    public var response: HTTPServerResponse {
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return HTTPServerResponse(
            status: kind.status, headerFields: fields, body: JSONValue.object(jsonObject).encoded())
    }
}
